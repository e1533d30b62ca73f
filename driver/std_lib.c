/* The std library instantiator: lang/std parsed once per compile into one program (kernels in one file
 * may call fns of another), instantiated through sema_instantiate / sema_instantiate_fn. */
#include "driver/std_lib.h"
#include <stdlib.h>
#include "driver/std_sources.h"
#include "frontend/sema.h"

struct StdLib {
    Arena *a;         /* the parsed programs */
    AstProgram prog;  /* every std file's declarations, chained */
    bool opened, ok;
};

StdLib *std_lib_new(void) {
    StdLib *s = xcalloc(1, sizeof *s);
    s->a = arena_new();
    return s;
}

void std_lib_free(StdLib *s) {
    if (!s) return;
    arena_free(s->a);
    free(s);
}

/* Each file keeps its own name, so an error in a std kernel points into that file. */
static bool open_std(void *ctx, DiagEngine *d) {
    StdLib *s = ctx;
    if (s->opened) return s->ok;
    s->opened = true;
    if (tl_std_source_count == 0) {
        diag_error(d, NOLOC, "graphs need the std kernels (lang/std/*.tile), and this libtilec was built without any");
        return false;
    }
    int errors0 = diag_error_count(d);
    AstDecl *last = NULL;
    for (int i = 0; i < tl_std_source_count; i++) {
        const char *file = diag_add_file(d, tl_std_sources[i].path, tl_std_sources[i].text);
        AstProgram *p = ast_parse(s->a, d, file, tl_std_sources[i].text);
        if (!p) continue;
        if (!s->prog.file) s->prog.file = file;
        for (AstDecl *x = p->decls; x; x = x->next) {
            if (last) last->next = x;
            else s->prog.decls = x;
            last = x;
            s->prog.ndecls++;
        }
    }
    s->ok = diag_error_count(d) == errors0;
    return s->ok;
}

static Func *kernel(void *ctx, IrModule *m, const char *decl, const char *as_name, const char *const *names,
                    const char *const *values, int n, DiagEngine *d) {
    StdLib *s = ctx;
    SemaDefine *defs = xcalloc((size_t)n + 1, sizeof *defs);
    for (int i = 0; i < n; i++) defs[i] = (SemaDefine){names[i], values[i]};
    Func *f = sema_instantiate(m, &s->prog, decl, as_name, defs, n, d);
    free(defs);
    return f;
}

static Func *fn(void *ctx, IrModule *m, const char *name, DiagEngine *d) {
    StdLib *s = ctx;
    return sema_instantiate_fn(m, &s->prog, name, d);
}

GpInstantiator std_lib_instantiator(StdLib *s) {
    return (GpInstantiator){.ctx = s, .open = open_std, .kernel = kernel, .fn = fn};
}

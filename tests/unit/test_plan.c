/* Execution plans (docs/graphs.md sections 4 and 5; runtime/plan*.c): shape expressions, the plan
 * text (good, and each record kind malformed), a graph block inside the kernel metadata, the shapes
 * and views a plan computes, and hand-written plans run on the emulator against the small kernels of
 * Inputs/plan_kernels.tile: symbols and derived dims, broadcast and permuted views, aliases, zero
 * buffers, f16 buffers, chains with intermediates, a captured run, and every run-time error with its
 * message. Numbers are compared with a float64 reference (f32: |d| <= 1e-6 + 1e-6 |ref|; through f16:
 * 1e-4 + 1e-3 |ref|) on fresh random inputs (seed printed; TILEC_SEED=... replays). Outputs are
 * poisoned: the emulator fills every new allocation with 0xff bytes, a NaN in f32 and f16, which a
 * test below checks on a plan whose launch is skipped. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "runtime/rt.h"
#include "emu_util.h"

#define CONTAINS(hay, needle) (strstr((hay), (needle)) != NULL)

static TlrtModule *mod;
static char *meta_text; /* tilec --emit=meta of plan_kernels.tile */

/* Status st and the context's message containing want (and want2 when given). */
static void expect(TlrtStatus st, TlrtStatus want_st, const char *want, const char *want2, int line) {
    const char *e = tlrt_last_error(ctx);
    bool ok = st == want_st && (!want || CONTAINS(e, want)) && (!want2 || CONTAINS(e, want2));
    CHECK(ok);
    if (!ok)
        fprintf(stderr, "  line %d: got %s '%s'\n  want %s '%s'%s%s%s\n", line, tlrt_status_name(st), e, tlrt_status_name(want_st),
                want ? want : "", want2 ? " and '" : "", want2 ? want2 : "", want2 ? "'" : "");
}
#define EXPECT(st, want_st, want, want2) expect((st), (want_st), (want), (want2), __LINE__)

/* ---- expressions */

static RtPlanSym test_syms[4] = {{.name = "N"}, {.name = "H"}, {.name = "max"}, {.name = "W_2"}};

static bool eval_text(const char *text, const int64_t *vals, int64_t *v, char *err, size_t n) {
    RtExpr e;
    if (!rt_expr_parse(text, test_syms, 4, &e, err, n)) return false;
    bool ok = rt_expr_eval(&e, vals, v, err, n);
    rt_expr_free(&e);
    return ok;
}

static void expr_is(const char *text, int64_t want) {
    int64_t vals[4] = {7, -3, 5, 100}, v = 0;
    char err[512] = "";
    bool ok = eval_text(text, vals, &v, err, sizeof err);
    CHECK(ok && v == want);
    if (!ok || v != want) fprintf(stderr, "  '%s': got %" PRId64 " (%s), want %" PRId64 "\n", text, v, err, want);
}

static void expr_bad(const char *text, const char *want) {
    int64_t vals[4] = {7, -3, 5, 100}, v;
    char err[512] = "";
    bool ok = eval_text(text, vals, &v, err, sizeof err);
    CHECK(!ok && CONTAINS(err, want));
    if (ok || !CONTAINS(err, want)) fprintf(stderr, "  '%s': got '%s', want '%s'\n", text, ok ? "(accepted)" : err, want);
}

static void test_expr(void) {
    expr_is("42", 42);
    expr_is("N", 7);
    expr_is("N+H*2", 1);          /* precedence */
    expr_is("(N+H)*2", 8);
    expr_is("N-H-1", 9);          /* left associative */
    expr_is("7/2", 3);
    expr_is("-7/2", -4);          /* floor division */
    expr_is("7/-2", -4);
    expr_is("-7%2", 1);           /* its remainder */
    expr_is("7%-2", -1);
    expr_is("H%N", 4);
    expr_is("cdiv(N,2)", 4);
    expr_is("cdiv(-7,2)", -3);
    expr_is("cdiv(H,-2)", 2);
    expr_is("max(N,H)", 7);
    expr_is("min(N,H)", -3);
    expr_is("max+1", 6);          /* `max` without '(' is a symbol */
    expr_is("max(max,W_2)", 100);
    expr_is("--N", 7);
    expr_is("-(N*H)", 21);
    expr_is("(H+2-3)/2+1", -1);
    expr_is("9223372036854775807", INT64_MAX);
    expr_is("-9223372036854775807-1", INT64_MIN);
    expr_is("(-9223372036854775807-1)%-1", 0);
    expr_is("((((((((((N))))))))))", 7);
    expr_bad("", "unexpected end");
    expr_bad("N+", "unexpected end");
    expr_bad("N H", "unexpected character");
    expr_bad("(N", "expected ')'");
    expr_bad("cdiv(N)", "expected ','");
    expr_bad("cdiv(N,2", "expected ')'");
    expr_bad("Q*2", "unknown symbol 'Q'");
    expr_bad("2.5", "unexpected character");
    expr_bad("9223372036854775808", "does not fit in int64");
    expr_bad("N/0", "division by zero in 'N/0' (7 / 0)");
    expr_bad("N%(H+3)", "division by zero");
    expr_bad("cdiv(1,N-N)", "division by zero");
    expr_bad("9223372036854775807+1", "int64 overflow");
    expr_bad("-9223372036854775807-2", "int64 overflow");
    expr_bad("W_2*W_2*W_2*W_2*W_2*W_2*W_2*W_2*W_2*W_2", "int64 overflow");
    expr_bad("(-9223372036854775807-1)/-1", "int64 overflow");
    expr_bad("-(-9223372036854775807-1)", "int64 overflow");
    /* nesting is bounded, whatever the text */
    char deep[400];
    memset(deep, '(', 100);
    strcpy(deep + 100, "N");
    memset(deep + 101, ')', 100);
    deep[201] = 0;
    expr_bad(deep, "nested too deeply");
    memset(deep, '-', 300);
    strcpy(deep + 300, "1");
    expr_bad(deep, "nested too deeply");
    /* a deep stack without deep nesting: N-(N-(N-...)) is nested; N*N+N*N+... is not */
    char wide[2000] = "";
    for (int i = 0; i < 100; i++) strcat(wide, i ? "+N*N" : "N*N");
    int64_t vals[4] = {1, 0, 0, 0}, v = 0;
    char err[256];
    CHECK(eval_text(wide, vals, &v, err, sizeof err) && v == 100);
    RtExpr e;
    CHECK(rt_expr_parse("H*N+max", test_syms, 4, &e, err, sizeof err));
    int64_t vv[4] = {7, -3, 5, 100};
    rt_expr_describe_syms(&e, test_syms, vv, err, sizeof err);
    CHECK(!strcmp(err, "H=-3, N=7, max=5"));
    int64_t c;
    CHECK(!rt_expr_is_const(&e, &c));
    rt_expr_free(&e);
    CHECK(rt_expr_parse("12", test_syms, 4, &e, err, sizeof err) && rt_expr_is_const(&e, &c) && c == 12);
    rt_expr_free(&e);
}

/* ---- the plan text */

/* A plan using every record kind, against plan_kernels.tile. */
static const char plan_all[] =
    "graph all\n"
    "sym N\n"
    "sym C\n"
    "def L2 cdiv(C,2)*2\n"
    "input x f32 N,C,4\n"
    "param b f32 C,1\n"
    "param w f32 max(C,1)\n"
    "check L2 C\n"
    "buffer z f32 1,4 zero\n"
    "buffer y f32 N,C,4 -\n"
    "alias y2 y N*C,4\n"
    "buffer yo f32 N*C,4 -\n"
    "alias yf yo N*C*4\n"
    "launch plan_add cdiv(N*C*4,64) 1 1 3\n"
    "arg view x\n"
    "arg view b shape N,C,4\n"
    "arg view y\n"
    "launch plan_scale cdiv(4,32) N*C 1 4\n"
    "arg view y2\n"
    "arg view yo\n"
    "arg f32 0.5\n"
    "arg i32 C-1\n"
    "launch plan_scale 1 N*C 1 4\n"
    "arg view z shape N*C,4\n"
    "arg view yo\n"
    "arg f32 -1.5e-3\n"
    "arg i32 0\n"
    "output out yf\n"
    "endgraph\n";

/* A prepare scales the param w (viewed through an alias) into the pbuffer ws = 2 w - 1; the launch adds ws,
 * broadcast over the batch, to the input x. */
static const char plan_prep[] =
    "graph prep\n"
    "sym N\n"
    "sym R\n"
    "sym C\n"
    "input x f32 N,R,C\n"
    "param w f32 R,C\n"
    "alias wa w R,C\n"
    "pbuffer ws f32 R,C\n"
    "buffer y f32 N,R,C -\n"
    "prepare plan_scale cdiv(C,32) R 1 4\n"
    "arg view wa\n"
    "arg view ws\n"
    "arg f32 2\n"
    "arg i32 -1\n"
    "launch plan_add cdiv(N*R*C,64) 1 1 3\n"
    "arg view x\n"
    "arg view ws shape N,R,C\n"
    "arg view y\n"
    "output y y\n"
    "endgraph\n";

static void test_parse_good(void) {
    RtPlanDef g;
    char err[1024];
    bool ok = rt_plan_parse_text(plan_all, &mod->meta, &g, err, sizeof err);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CHECK(!strcmp(g.name, "all") && g.nsyms == 3 && g.ntensors == 8 && g.nchecks == 1 && g.nlaunches == 3 && g.noutputs == 1);
    CHECK(!g.syms[0].derived && g.syms[2].derived && !strcmp(g.syms[2].def.text, "cdiv(C,2)*2"));
    const RtPlanTensor *x = &g.tensors[0], *b = &g.tensors[1], *z = &g.tensors[3], *yf = &g.tensors[7];
    CHECK(x->kind == RT_PLAN_INPUT && x->rank == 3 && x->bind_sym[0] == 0 && x->bind_sym[1] == 1 && x->bind_sym[2] == -1);
    CHECK(b->kind == RT_PLAN_PARAM && b->bind_sym[0] == 1 && !strcmp(b->dims_text, "C,1"));
    CHECK(g.tensors[2].bind_sym[0] == -1); /* max(C,1) binds nothing */
    CHECK(z->kind == RT_PLAN_BUFFER && z->zero && !g.tensors[4].zero && z->esize == 4);
    CHECK(yf->kind == RT_PLAN_ALIAS && yf->source == 6 && !strcmp(yf->dtype, "f32") && yf->rank == 1);
    CHECK(g.tensors[5].kind == RT_PLAN_ALIAS && g.tensors[5].source == 4 && g.tensors[5].rank == 2);
    const RtPlanLaunch *l = &g.launches[1];
    CHECK(!strcmp(l->kernel, "plan_scale") && l->nargs == 4 && l->args[0].nshape == 0 && g.launches[2].args[0].nshape == 2 && l->args[2].kind == RT_PLAN_ARG_F32 &&
          l->args[2].f32 == 0.5f && l->args[3].kind == RT_PLAN_ARG_I32);
    CHECK(g.launches[0].args[1].nshape == 3 && g.launches[0].args[1].tensor == 1);
    CHECK(g.outputs[0].tensor == 7 && !strcmp(g.outputs[0].name, "out"));
    CHECK(g.launches[2].args[2].f32 == -1.5e-3f);
    rt_plan_def_free(&g);
    /* pbuffer and prepare records, the prepares kept apart from the launches */
    ok = rt_plan_parse_text(plan_prep, &mod->meta, &g, err, sizeof err);
    CHECK(ok && g.nprepares == 1 && g.nlaunches == 1 && g.tensors[3].kind == RT_PLAN_PBUFFER && g.tensors[3].rank == 2 &&
          !strcmp(g.prepares[0].kernel, "plan_scale") && g.prepares[0].nargs == 4 && g.prepares[0].args[3].kind == RT_PLAN_ARG_I32 &&
          g.launches[0].args[1].tensor == 3);
    if (!ok) fprintf(stderr, "  %s\n", err);
    if (ok) {
        int64_t vals[3];
        RtPlanShape shapes[5];
        const int64_t xs[3] = {2, 3, 40}, wsz[2] = {3, 40};
        const int64_t *bound[5] = {xs, wsz, NULL, NULL, NULL};
        unsigned grid[3];
        bool skip;
        TlrtArg args[4];
        CHECK(rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err) && shapes[3].bytes == 3 * 40 * 4);
        CHECK(rt_plan_prepare_args(&g, 0, vals, shapes, NULL, grid, &skip, args, err, sizeof err) && grid[0] == 2 && grid[1] == 3 &&
              args[3].u.i32 == -1 && args[1].u.view.sizes[1] == 40);
        rt_plan_def_free(&g);
    }
    /* f32 args as C's %.9g writes them: -FLT_MAX reads back a little beyond it, infinities and NaN */
    ok = rt_plan_parse_text("graph f\nsym N\ninput x f32 N,N\nlaunch plan_scale 1 1 1 4\narg view x\narg view x\narg f32 -3.40282347e+38\n"
                            "arg i32 0\nlaunch plan_scale 1 1 1 4\narg view x\narg view x\narg f32 inf\narg i32 0\n"
                            "launch plan_scale 1 1 1 4\narg view x\narg view x\narg f32 nan\narg i32 0\noutput o x\nendgraph\n",
                            &mod->meta, &g, err, sizeof err);
    CHECK(ok && g.launches[0].args[2].f32 == -FLT_MAX && isinf(g.launches[1].args[2].f32) && isnan(g.launches[2].args[2].f32));
    if (!ok) fprintf(stderr, "  %s\n", err);
    if (ok) rt_plan_def_free(&g);
    ok = rt_plan_parse_text(plan_all, &mod->meta, &g, err, sizeof err);
    CHECK(ok);
    if (!ok) return;

    /* shapes, without a device */
    int64_t xs[3] = {2, 3, 4}, bs[2] = {3, 1}, ws[1] = {3};
    const int64_t *bound[8] = {xs, bs, ws, NULL, NULL, NULL, NULL, NULL};
    int64_t vals[3];
    RtPlanShape shapes[8];
    ok = rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err);
    CHECK(!ok && CONTAINS(err, "graph all: check L2 == C failed: 4 != 3 (L2=4; C=3)"));
    if (ok || !CONTAINS(err, "check L2")) fprintf(stderr, "  %s\n", err);
    xs[1] = bs[0] = ws[0] = 4;
    ok = rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err);
    CHECK(ok);
    if (!ok) fprintf(stderr, "  %s\n", err);
    CHECK(vals[0] == 2 && vals[1] == 4 && vals[2] == 4);
    CHECK(shapes[3].numel == 4 && shapes[3].bytes == 16 && shapes[4].numel == 32 && shapes[5].sizes[0] == 8 && shapes[5].sizes[1] == 4);
    CHECK(shapes[7].sizes[0] == 32 && shapes[7].numel == 32 && shapes[7].bytes == 128);
    unsigned grid[3];
    bool skip;
    TlrtArg args[4];
    void *data[8] = {(void *)0x1000, (void *)0x2000, (void *)0x3000, (void *)0x4000,
                     (void *)0x5000, (void *)0x5000, (void *)0x6000, (void *)0x6000};
    CHECK(rt_plan_launch_args(&g, 0, vals, shapes, data, grid, &skip, args, err, sizeof err));
    CHECK(grid[0] == 1 && grid[1] == 1 && grid[2] == 1 && !skip);
    /* b [4,1] broadcast to [2,4,4]: a new leading dim and a size-1 dim that grows get stride 0 */
    const TlrtView *bv = &args[1].u.view;
    CHECK(bv->data == (void *)0x2000 && bv->rank == 3 && bv->sizes[0] == 2 && bv->sizes[1] == 4 && bv->sizes[2] == 4);
    CHECK(bv->strides[0] == 0 && bv->strides[1] == 1 && bv->strides[2] == 0);
    const TlrtView *xv = &args[0].u.view;
    CHECK(xv->strides[0] == 16 && xv->strides[1] == 4 && xv->strides[2] == 1);
    CHECK(rt_plan_launch_args(&g, 1, vals, shapes, data, grid, &skip, args, err, sizeof err));
    /* the alias y2 [8,4] of y: y's storage, contiguous in its own dims */
    CHECK(grid[0] == 1 && grid[1] == 8 && grid[2] == 1 && args[0].u.view.rank == 2 && args[0].u.view.sizes[0] == 8);
    CHECK(args[0].u.view.data == (void *)0x5000 && args[0].u.view.strides[0] == 4 && args[0].u.view.strides[1] == 1);
    CHECK(args[2].kind == TLRT_ARG_F32 && args[2].u.f32 == 0.5f && args[3].kind == TLRT_ARG_I32 && args[3].u.i32 == 3);
    CHECK(rt_plan_launch_args(&g, 2, vals, shapes, data, grid, &skip, args, err, sizeof err));
    /* z [1,4] broadcast to [8,4] */
    CHECK(args[0].u.view.sizes[0] == 8 && args[0].u.view.strides[0] == 0 && args[0].u.view.strides[1] == 1);
    /* a permuted view: x [2,4,4] with perm 2,0,1 -> sizes [4,2,4], strides [1,16,4] */
    g.launches[0].args[0].nperm = 3;
    g.launches[0].args[0].perm[0] = 2, g.launches[0].args[0].perm[1] = 0, g.launches[0].args[0].perm[2] = 1;
    CHECK(rt_plan_launch_args(&g, 0, vals, shapes, data, grid, &skip, args, err, sizeof err));
    const TlrtView *pv = &args[0].u.view;
    CHECK(pv->sizes[0] == 4 && pv->sizes[1] == 2 && pv->sizes[2] == 4 && pv->strides[0] == 1 && pv->strides[1] == 16 && pv->strides[2] == 4);
    rt_plan_def_free(&g);
}

/* Parses a plan that must fail with `want` (which includes the line number). */
static void plan_bad(const char *text, const char *want) {
    RtPlanDef g;
    char err[1024] = "";
    bool ok = rt_plan_parse_text(text, &mod->meta, &g, err, sizeof err);
    CHECK(!ok && CONTAINS(err, want));
    if (ok) rt_plan_def_free(&g);
    if (ok || !CONTAINS(err, want)) fprintf(stderr, "  for:\n%s  got '%s'\n  want '%s'\n", text, ok ? "(accepted)" : err, want);
    CHECK(ok || (g.name == NULL && g.ntensors == 0)); /* nothing left behind */
}

#define HEAD "graph g\nsym N\ninput x f32 N\nbuffer y f32 N -\n"

static void test_parse_bad(void) {
    plan_bad("", "plan line 0: no 'graph NAME' block");
    plan_bad("\n\n", "no 'graph NAME' block");
    plan_bad("graph\nendgraph\n", "plan line 1: a graph block starts with 'graph NAME'");
    plan_bad("graph 9g\nendgraph\n", "starts with 'graph NAME'");
    plan_bad("graph g\nsym N\n", "plan line 2: graph g: no 'endgraph'");
    plan_bad("graph g\nfrob x\nendgraph\n", "plan line 2: graph g: unknown record 'frob'");
    /* sym / def */
    plan_bad("graph g\nsym\nendgraph\n", "line 2: graph g: a sym record is 'sym NAME'");
    plan_bad("graph g\nsym 1N\nendgraph\n", "sym: bad name '1N'");
    plan_bad("graph g\nsym N\nsym N\nendgraph\n", "line 3: graph g: sym N: a symbol of that name is already declared");
    plan_bad("graph g\nsym N\ndef N N+1\nendgraph\n", "def N: a symbol of that name is already declared");
    plan_bad("graph g\ndef P\nendgraph\n", "a def record is 'def NAME EXPR'");
    plan_bad("graph g\nsym N\ndef P N+\nendgraph\n", "line 3: graph g: def P: bad expression 'N+'");
    plan_bad("graph g\ndef P P+1\nendgraph\n", "unknown symbol 'P'");
    plan_bad("graph g\nsym N\ndef P M\nsym M\nendgraph\n", "def P: bad expression 'M': unknown symbol 'M'");
    plan_bad("graph g\nsym N\nsym K\ninput x f32 N\n" "output o x\nendgraph\n",
             "plan line 3: graph g: sym K is not a dim of any input or param");
    plan_bad("graph g\nsym N\ninput x f32 N+1\noutput o x\nendgraph\n", "sym N is not a dim of any input or param");
    /* input / param / buffer / alias */
    plan_bad("graph g\nsym N\ninput x f64 N\nendgraph\n", "line 3: graph g: input x: unknown dtype 'f64'");
    plan_bad("graph g\nsym N\ninput x f32\nendgraph\n", "an input/param record is 'input|param NAME DTYPE DIMS'");
    plan_bad("graph g\nsym N\nparam w f32 N 3\nendgraph\n", "an input/param record");
    plan_bad("graph g\nsym N\ninput x f32 N,,3\nendgraph\n", "input x: an empty dim in 'N,,3'");
    plan_bad("graph g\nsym N\ninput x f32 N,\nendgraph\n", "an empty dim");
    plan_bad("graph g\nsym N\ninput x f32 1,2,3,4,5,6,7,8,N\nendgraph\n", "have more than 8 entries");
    plan_bad("graph g\nsym N\ninput x f32 N,(N\nendgraph\n", "input x: bad expression '(N': expected ')'");
    plan_bad("graph g\nsym N\ninput x f32 N\nparam x f32 N\nendgraph\n", "line 4: graph g: param x: a tensor of that name is already declared");
    plan_bad("graph g\nsym N\ninput x-1 f32 N\nendgraph\n", "input: bad name 'x-1'");
    plan_bad("graph g\nsym N\ninput x f32 N\nbuffer y f32 N\nendgraph\n", "a buffer record is 'buffer NAME DTYPE DIMS zero|-'");
    plan_bad("graph g\nsym N\ninput x f32 N\nbuffer y f32 N maybe\nendgraph\n", "buffer y: expected 'zero' or '-' after the dims, got 'maybe'");
    plan_bad("graph g\nsym N\ninput x f32 N\nbuffer y bf8 N -\nendgraph\n", "buffer y: unknown dtype 'bf8'");
    plan_bad("graph g\nsym N\ninput x f32 N\nalias r q N\nendgraph\n", "alias r: unknown source tensor 'q'");
    plan_bad("graph g\nsym N\ninput x f32 N\nalias r x\nendgraph\n", "an alias record is 'alias NAME SOURCE DIMS'");
    /* pbuffer / prepare */
    plan_bad("graph g\nsym N\nparam w f32 N\npbuffer p f32\nendgraph\n", "line 4: graph g: a pbuffer record is 'pbuffer NAME DTYPE DIMS'");
    plan_bad("graph g\nsym N\nparam w f32 N\npbuffer p f32 N zero\nendgraph\n", "a pbuffer record is");
    plan_bad("graph g\nsym N\nparam w f32 N\npbuffer w f32 N\nendgraph\n", "pbuffer w: a tensor of that name is already declared");
    plan_bad("graph g\nsym N\nparam w f32 N\npbuffer p f8 N\nendgraph\n", "pbuffer p: unknown dtype 'f8'");
    plan_bad("graph g\nsym N\nparam w f32 N\npbuffer p f32 M\nendgraph\n", "pbuffer p: bad expression 'M': unknown symbol 'M'");
    plan_bad("graph g\nsym R\nsym C\ninput x f32 R,C\nparam w f32 R,C\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R 1 4\narg view x\narg view p\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "line 8: graph g: prepare #0 plan_scale: arg 0: x is an input: a prepare's views name params and pbuffers (or their aliases) only");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\nbuffer b f32 R,C -\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R 1 4\narg view w\narg view b\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "prepare #0 plan_scale: arg 1: b is a buffer: a prepare's views");
    plan_bad("graph g\nsym R\nsym C\ninput x f32 R,C\nparam w f32 R,C\nalias xa x R,C\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R 1 4\narg view xa\narg view p\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "prepare #0 plan_scale: arg 0: xa is an alias of an input x: a prepare's views");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\n"
             "launch plan_scale 1 R 1 4\narg view w\narg view p\narg f32 2\narg i32 0\n"
             "prepare plan_scale 1 R 1 4\narg view w\narg view p\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "line 11: graph g: prepare #0 plan_scale: the prepare records come before the first launch");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R 1 4\narg view w\noutput o p\nendgraph\n",
             "line 8: graph g: prepare #0 plan_scale: expected 4 arg lines, found 1 before this 'output' record");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\nprepare plan_scale 1 R 1\noutput o p\nendgraph\n",
             "prepare #0: a prepare record is 'prepare KERNEL GX GY GZ NARGS'");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\nprepare nope 1 R 1 0\noutput o p\nendgraph\n",
             "line 6: graph g: prepare #0: no kernel 'nope' in the module");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f16 R,C\n"
             "prepare plan_scale 1 R 1 4\narg view w\narg view p\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "prepare #0 plan_scale: arg 1: a view of p (f16, rank 2) for parameter y, a view of f32, rank 2");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R 1 3\narg view w\narg view p\narg f32 2\noutput o p\nendgraph\n",
             "prepare #0 plan_scale: 3 args, the kernel takes 4");
    plan_bad("graph g\nsym R\nsym C\nparam w f32 R,C\npbuffer p f32 R,C\n"
             "prepare plan_scale 1 R+ 1 4\narg view w\narg view p\narg f32 2\narg i32 0\noutput o p\nendgraph\n",
             "prepare #0 plan_scale: grid: bad expression 'R+'");
    /* check */
    plan_bad(HEAD "check N\nendgraph\n", "line 5: graph g: a check record is 'check EXPR EXPR'");
    plan_bad(HEAD "check N N*\nendgraph\n", "check: bad expression 'N*'");
    /* launch and its args */
    plan_bad(HEAD "launch plan_add 1 1 1\nendgraph\n", "line 5: graph g: launch #0: a launch record is 'launch KERNEL GX GY GZ NARGS'");
    plan_bad(HEAD "launch plan_add 1 1 1 x\nendgraph\n", "launch #0 plan_add: bad NARGS 'x' (0 .. 256)");
    plan_bad(HEAD "launch plan_add 1 1 1 300\nendgraph\n", "bad NARGS '300'");
    plan_bad(HEAD "launch plan_add 1 1 1 -1\nendgraph\n", "bad NARGS '-1'");
    plan_bad(HEAD "launch plan-add 1 1 1 0\nendgraph\n", "launch #0: bad kernel name 'plan-add'");
    plan_bad(HEAD "launch plan_add (1 1 1 0\nendgraph\n", "launch #0 plan_add: grid: bad expression '(1'");
    plan_bad(HEAD "launch plan_add 1 1 1 3\narg view x\noutput o y\nendgraph\n",
             "line 7: graph g: launch #0 plan_add: expected 3 arg lines, found 1 before this 'output' record");
    plan_bad(HEAD "output o y\nendgraph\nx\n", "plan line 7: graph g: 'x' after endgraph");
    plan_bad(HEAD "arg view x\nendgraph\n", "line 5: graph g: an 'arg' record that no launch or prepare expects");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x\narg view x\narg view x\nendgraph\n", "line 8: graph g: an 'arg' record that no launch or prepare expects");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view q\n", "line 6: graph g: launch #0 plan_to_half: arg 0: unknown tensor 'q'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x perm 1\n", "arg 0: perm '1' is not a permutation of the tensor's 1 dims");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x perm 0,0\n", "is not a permutation");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x perm 0,\n", "bad perm '0,'");
    plan_bad("graph g\nsym N\ninput x f32 N,2\nlaunch plan_to_half 1 1 1 2\narg view x perm 1,1\n", "perm '1,1' is not a permutation of the tensor's 2 dims");
    plan_bad("graph g\nsym N\ninput x f32 N,2\nlaunch plan_to_half 1 1 1 2\narg view x perm 1\n", "perm '1' is not a permutation");
    plan_bad("graph g\nsym N\ninput x f32 N,2\nlaunch plan_to_half 1 1 1 2\narg view x shape N\n",
             "shape 'N' has 1 dims, fewer than x's 2 (a broadcast only adds dims)");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x shape N,(\n", "arg 0: bad expression '('");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x bogus\n", "expected 'arg view TENSOR [perm P0,P1,..] [shape DIMS]', got 'bogus'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x shape N perm 0\n", "got 'perm'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg i32\n", "expected 'arg view TENSOR ...', 'arg i32 EXPR' or 'arg f32 FLOAT'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg i64 3\n", "expected 'arg view TENSOR ...'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg i32 N+\n", "arg 0: bad expression 'N+'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg f32 abc\n", "arg 0: bad f32 'abc'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg f32 1.5x\n", "bad f32 '1.5x'");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg f32 1e39\n", "arg 0: 1e39 does not fit in f32");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg f32 -3.4028236e38\n", "arg 0: -3.4028236e38 does not fit in f32");
    /* output / endgraph */
    plan_bad(HEAD "output o\nendgraph\n", "line 5: graph g: an output record is 'output NAME TENSOR'");
    plan_bad(HEAD "output o q\nendgraph\n", "output o: unknown tensor 'q'");
    plan_bad(HEAD "output o y\noutput o x\nendgraph\n", "line 6: graph g: output o is declared twice");
    plan_bad(HEAD "output 2o y\nendgraph\n", "output: bad name '2o'");
    plan_bad(HEAD "endgraph\n", "line 5: graph g: the graph has no output");
    plan_bad(HEAD "output o y\nendgraph now\n", "unexpected field 'now' after endgraph");
    /* against the kernels */
    plan_bad(HEAD "launch nope 1 1 1 0\noutput o y\nendgraph\n", "plan line 5: graph g: launch #0: no kernel 'nope' in the module");
    plan_bad(HEAD "launch plan_add 1 1 1 2\narg view x\narg view y\noutput o y\nendgraph\n", "launch #0 plan_add: 2 args, the kernel takes 3");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x\narg view y\noutput o y\nendgraph\n",
             "plan line 7: graph g: launch #0 plan_to_half: arg 1: a view of y (f32, rank 1) for parameter y, a view of f16, rank 1");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg view x shape 1,N\narg view y\noutput o y\nendgraph\n",
             "arg 0: a view of x (f32, rank 2) for parameter x, a view of f32, rank 1");
    plan_bad(HEAD "launch plan_to_half 1 1 1 2\narg i32 N\narg view y\noutput o y\nendgraph\n",
             "arg 0: an i32 scalar for parameter x, a view of f32, rank 1");
    plan_bad("graph g\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 1 1 4\narg view x\narg view y\narg i32 1\narg i32 2\noutput o y\nendgraph\n",
             "line 8: graph g: launch #0 plan_scale: arg 2: an i32 scalar for parameter s, a scalar f32");
    plan_bad("graph g\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 1 1 4\narg view x\narg view y\narg f32 1\narg f32 2\noutput o y\nendgraph\n",
             "arg 3: an f32 scalar for parameter t, a scalar i32");
    /* line limits */
    char *longline = malloc(6000);
    strcpy(longline, "graph g\nsym N\ninput x f32 ");
    size_t n = strlen(longline);
    memset(longline + n, 'N', 5000);
    strcpy(longline + n + 5000, "\nendgraph\n");
    plan_bad(longline, "plan line 3: line too long or too many fields");
    free(longline);
    plan_bad("graph g\nsym a b c d e f g h i j k l m n o p q r\nendgraph\n", "line too long or too many fields");
}

/* Kernel metadata with a graph block: the emitted metadata with `block` inserted before its `end`. */
static char *meta_with(const char *block) {
    const char *end = strstr(meta_text, "\nend\n");
    size_t head = (size_t)(end - meta_text) + 1;
    char *s = malloc(strlen(meta_text) + strlen(block) + 1);
    memcpy(s, meta_text, head);
    strcpy(s + head, block);
    strcat(s, end + 1);
    return s;
}

static void meta_bad(const char *block, const char *want) {
    char *text = meta_with(block);
    RtMeta m;
    char err[512] = "";
    bool ok = rt_meta_parse(text, &m, err, sizeof err);
    CHECK(!ok && CONTAINS(err, want));
    if (ok || !CONTAINS(err, want)) fprintf(stderr, "  got '%s', want '%s'\n", ok ? "(accepted)" : err, want);
    if (ok) rt_meta_free(&m);
    CHECK(m.ngraphs == 0 && m.graphs == NULL && m.nvariants == 0);
    free(text);
}

static int meta_lines(void) {
    int n = 0;
    for (const char *c = meta_text; *c; c++) n += *c == '\n';
    return n;
}

static void test_meta_graph(void) {
    char *text = meta_with(plan_all);
    RtMeta m;
    char err[512] = "";
    bool ok = rt_meta_parse(text, &m, err, sizeof err);
    CHECK(ok);
    if (!ok) fprintf(stderr, "  %s\n", err);
    CHECK(ok && m.ngraphs == 1 && m.nvariants == mod->meta.nvariants && !strcmp(m.graphs[0].name, "all") &&
          m.graphs[0].nlaunches == 3 && m.graphs[0].line == meta_lines());
    if (ok) rt_meta_free(&m);
    CHECK(m.graphs == NULL && m.ngraphs == 0);
    free(text);

    /* the PTX comment form: every line with its "// " prefix, two graphs */
    char two[4096];
    snprintf(two, sizeof two, "%s%s", plan_all, "graph second\nsym N\ninput x f32 N\noutput o x\nendgraph\n");
    text = meta_with(two);
    size_t n = 0;
    for (const char *c = text; *c; c++) n += *c == '\n';
    char *ptx = malloc(strlen(text) + 3 * n + 64);
    char *o = ptx;
    for (const char *c = text; *c;) {
        o += sprintf(o, "// ");
        while (*c && *c != '\n') *o++ = *c++;
        if (*c) *o++ = *c++;
    }
    strcpy(o, ".version 8.0\n");
    ok = rt_meta_parse(ptx, &m, err, sizeof err);
    CHECK(ok && m.ngraphs == 2 && !strcmp(m.graphs[1].name, "second") && m.graphs[1].ntensors == 1);
    if (!ok) fprintf(stderr, "  %s\n", err);
    if (ok) rt_meta_free(&m);
    free(ptx);
    free(text);

    int at = meta_lines(); /* the graph line's number is one past the kernels */
    char want[128];
    snprintf(want, sizeof want, "metadata line %d: graph g: 'end' before its 'endgraph'", at + 2);
    meta_bad("graph g\nsym N\n", want);
    /* a plan with a prepare and a pbuffer inside the metadata (the fuzz seed plan_prep.meta) */
    text = meta_with(plan_prep);
    ok = rt_meta_parse(text, &m, err, sizeof err);
    CHECK(ok && m.ngraphs == 1 && m.graphs[0].nprepares == 1 && m.graphs[0].nlaunches == 1);
    if (!ok) fprintf(stderr, "  %s\n", err);
    if (ok) rt_meta_free(&m);
    free(text);
    snprintf(want, sizeof want, "metadata line %d: graph g: prepare #0: no kernel 'nope' in the module", at + 3);
    meta_bad("graph g\nsym N\nparam w f32 N\nprepare nope 1 1 1 0\noutput o w\nendgraph\n", want);
    snprintf(want, sizeof want, "metadata line %d: graph g: launch #0: no kernel 'nope' in the module", at + 3);
    meta_bad("graph g\nsym N\ninput x f32 N\nlaunch nope 1 1 1 0\noutput o x\nendgraph\n", want);
    snprintf(want, sizeof want, "metadata line %d: graph g: unknown record 'kernal'", at + 1);
    meta_bad("graph g\nkernal k\nendgraph\n", want);
    meta_bad("graph g\nsym N\ninput x f32 N\noutput o x\nendgraph\nkernel k2\n", "a 'kernel' record after a graph block");
    meta_bad("graph g\nsym N\ninput x f32 N\noutput o x\nendgraph\nparam 0 x ptr f32 facts=-\n", "a 'param' record after a graph block");
    meta_bad("graph g\nsym N\ninput x f32 N\noutput o x\nendgraph\ngraph g\nsym N\ninput x f32 N\noutput o x\nendgraph\n",
             "graph g appears twice");
    meta_bad("graph\n", "a graph block starts with 'graph NAME'");
    /* the text ends inside a block */
    RtMeta m2;
    CHECK(!rt_meta_parse("tilec-metadata 1\ngraph g\nsym N\n", &m2, err, sizeof err) &&
          CONTAINS(err, "metadata line 3: graph g has no 'endgraph'"));
    /* a graph block in a module without kernels still parses: its launches name none */
    CHECK(rt_meta_parse("tilec-metadata 1\ngraph g\nsym N\ninput x f32 N\noutput o x\nendgraph\nend\n", &m2, err, sizeof err) &&
          m2.ngraphs == 1 && m2.nvariants == 0);
    rt_meta_free(&m2);
}

/* A parse + evaluate loop over mutations of a good plan: whatever the bytes, the reader and the shape
 * evaluation give an answer (under ASan in build-asan). The libFuzzer target fuzz_meta does this
 * at length. */
static void test_mutations(void) {
    char *base = meta_with(plan_all);
    size_t len = strlen(base);
    char *buf = malloc(len + 64);
    static const char alphabet[] = "Nx,()+-*/%0123456789 \n_ygraphendsymdefviewpermshapearg";
    int parsed = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, base, len + 1);
        int edits = 1 + (int)((urand() + 1) * 2);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)((urand() + 1) / 2 * (double)len);
            if (at >= len) at = len - 1;
            buf[at] = alphabet[(size_t)((urand() + 1) / 2 * (sizeof alphabet - 1)) % (sizeof alphabet - 1)];
        }
        RtMeta m;
        char err[512];
        if (!rt_meta_parse(buf, &m, err, sizeof err)) {
            CHECK(err[0] != 0);
            continue;
        }
        parsed++;
        for (int gi = 0; gi < m.ngraphs; gi++) {
            const RtPlanDef *g = &m.graphs[gi];
            int64_t sizes[16][TLRT_MAX_RANK];
            const int64_t *bound[16] = {NULL};
            int64_t vals[16];
            RtPlanShape shapes[16];
            if (g->ntensors > 16 || g->nsyms > 16) continue;
            for (int t = 0; t < g->ntensors; t++) {
                for (int d = 0; d < TLRT_MAX_RANK; d++) sizes[t][d] = 1 + (int64_t)((urand() + 1) * 3);
                if (g->tensors[t].kind <= RT_PLAN_PARAM) bound[t] = sizes[t];
            }
            if (!rt_plan_eval_shapes(g, bound, vals, shapes, err, sizeof err)) continue;
            for (int li = 0; li < g->nlaunches; li++) {
                unsigned grid[3];
                bool skip;
                TlrtArg args[256];
                (void)rt_plan_launch_args(g, li, vals, shapes, NULL, grid, &skip, args, err, sizeof err);
            }
        }
        rt_meta_free(&m);
    }
    CHECK(parsed > 0); /* some mutations land in comments-free places that still parse */
    printf("mutations: %d of 3000 still parsed\n", parsed);
    free(buf);
    free(base);
}

/* ---- running plans on the emulator */

static TlrtPlan *make_plan(const char *text) {
    TlrtPlan *p = NULL;
    TlrtStatus st = rt_plan_create_from_text(mod, text, &p);
    CHECK(st == TLRT_OK && p);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    return p;
}

static float *rand_host(size_t n) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)urand();
    return h;
}

static void *upload(const float *h, size_t n) {
    void *d = dev_alloc(n * sizeof *h);
    CHECK(tlrt_memcpy_htod(ctx, d, h, n * sizeof *h) == TLRT_OK);
    return d;
}

static TlrtStatus bind_in(TlrtPlan *p, const char *name, void *d, int rank, const int64_t *sizes) {
    TlrtArg a = tlrt_arg_view(d, rank, sizes);
    return tlrt_plan_bind_input(p, name, &a.u.view);
}

/* Copies output `name` (n floats) and compares it with ref; returns the number of mismatches. */
static int compare_output(TlrtPlan *p, const char *name, const double *ref, size_t n, double atol, double rtol) {
    float *got = malloc(n * sizeof *got);
    TlrtStatus st = tlrt_plan_copy_output(p, name, got, n * sizeof *got);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    int bad = 0;
    for (size_t i = 0; i < n && st == TLRT_OK; i++)
        if (!(fabs(got[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
            if (bad++ < 3) fprintf(stderr, "  %s[%zu] = %.9g, want %.9g\n", name, i, got[i], ref[i]);
        }
    free(got);
    CHECK(bad == 0);
    return bad;
}

/* Broadcast add of a param [C,1] to an input [N,C,L], a derived dim, a check, the result through an
 * alias; then the input rebound with another N, and the param rebound. */
static const char plan_bcast[] =
    "graph bcast\n"
    "sym N\n"
    "sym C\n"
    "sym L\n"
    "def NL N*L\n"
    "input x f32 N,C,L\n"
    "param b f32 C,1\n"
    "check C*1 C\n"
    "buffer y f32 N,C,L -\n"
    "alias yf y NL*C\n"
    "launch plan_add cdiv(N*C*L,64) 1 1 3\n"
    "arg view x\n"
    "arg view b shape N,C,L\n"
    "arg view y\n"
    "output out yf\n"
    "endgraph\n";

static void run_bcast(TlrtPlan *p, int64_t N, int64_t C, int64_t L, const float *b) {
    size_t n = (size_t)(N * C * L);
    float *x = rand_host(n);
    void *dx = upload(x, n);
    int64_t xs[3] = {N, C, L};
    CHECK(bind_in(p, "x", dx, 3, xs) == TLRT_OK);
    TlrtStatus st = tlrt_plan_run(p, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    double *ref = malloc(n * sizeof *ref);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t l = 0; l < L; l++) ref[(i * C + c) * L + l] = (double)x[(i * C + c) * L + l] + (double)b[c];
    compare_output(p, "out", ref, n, 1e-6, 1e-6);
    TlrtView v;
    CHECK(tlrt_plan_output(p, "out", &v) == TLRT_OK && v.rank == 1 && v.sizes[0] == (int64_t)n && v.strides[0] == 1 && v.data);
    /* the view is the buffer y's storage: the plan still holds it after the run */
    int y = 2;
    CHECK(p->owned[y] && p->held[y] == n * 4 && p->data[y] == v.data);
    tlrt_free(ctx, dx);
    free(x);
    free(ref);
}

static void test_run_bcast(void) {
    TlrtPlan *p = make_plan(plan_bcast);
    if (!p) return;
    CHECK(tlrt_plan_launch_count(p) == 1);
    CHECK(tlrt_plan_tensor_count(p, 0) == 2 && tlrt_plan_tensor_count(p, 1) == 1 && tlrt_plan_tensor_count(p, 2) == 0);
    TlrtPlanTensorInfo info;
    CHECK(tlrt_plan_tensor_info(p, 0, 1, &info) == TLRT_OK && !strcmp(info.name, "b") && info.is_param && info.rank == 2 &&
          !strcmp(info.dims, "C,1") && !strcmp(info.dtype, "f32"));
    CHECK(tlrt_plan_tensor_info(p, 0, 0, &info) == TLRT_OK && !strcmp(info.name, "x") && !info.is_param && !strcmp(info.dims, "N,C,L"));
    CHECK(tlrt_plan_tensor_info(p, 1, 0, &info) == TLRT_OK && !strcmp(info.name, "out") && info.rank == 1 && !strcmp(info.dims, "NL*C"));
    EXPECT(tlrt_plan_tensor_info(p, 1, 1, &info), TLRT_ERR_INVALID, "tlrt_plan_tensor_info: graph bcast: no tensor 1 of kind 1", NULL);
    EXPECT(tlrt_plan_tensor_info(p, 0, 0, NULL), TLRT_ERR_INVALID, "info is NULL", NULL);

    /* before any run */
    TlrtView v;
    EXPECT(tlrt_plan_output(p, "out", &v), TLRT_ERR_INVALID, "tlrt_plan_output: graph bcast: output out: the plan has no successful run yet", NULL);
    EXPECT(tlrt_plan_run(p, NULL), TLRT_ERR_ARGS, "tlrt_plan_run: graph bcast: input x is not bound (tlrt_plan_bind_input)", NULL);

    int64_t C = 3 + (int64_t)((urand() + 1) * 4), L = 5 + (int64_t)((urand() + 1) * 20);
    float *b = rand_host((size_t)C);
    int64_t bs[2] = {C, 1};
    CHECK(tlrt_plan_bind_param(p, "b", b, 2, bs) == TLRT_OK);
    run_bcast(p, 2, C, L, b);
    run_bcast(p, 3, C, L + 1, b); /* another batch and length: rebinding replaces */
    /* a new param replaces the old one */
    for (int64_t c = 0; c < C; c++) b[c] = (float)urand() * 4;
    CHECK(tlrt_plan_bind_param(p, "b", b, 2, bs) == TLRT_OK);
    run_bcast(p, 1, C, L, b);

    /* binding errors */
    float dummy[64] = {0};
    int64_t b1[1] = {C}, b2[2] = {C, 2}, b0[2] = {-1, 1};
    EXPECT(tlrt_plan_bind_param(p, "b", dummy, 1, b1), TLRT_ERR_ARGS,
           "tlrt_plan_bind_param: graph bcast: param b: rank 1 given, the plan declares rank 2 (C,1)", NULL);
    EXPECT(tlrt_plan_bind_param(p, "b", dummy, 2, b2), TLRT_ERR_ARGS, "param b: dim 1 is 2, the plan declares 1 (C,1)", NULL);
    EXPECT(tlrt_plan_bind_param(p, "b", dummy, 2, b0), TLRT_ERR_ARGS, "param b: dim 0 is -1 (dims must be >= 0)", NULL);
    EXPECT(tlrt_plan_bind_param(p, "b", NULL, 2, bs), TLRT_ERR_INVALID, "param b: host is NULL", NULL);
    EXPECT(tlrt_plan_bind_param(p, "bb", dummy, 2, bs), TLRT_ERR_NOT_FOUND, "no param named 'bb' (params: b)", NULL);
    EXPECT(tlrt_plan_bind_param(p, "x", dummy, 3, bs), TLRT_ERR_ARGS, "x is an input, not a param: bind it with tlrt_plan_bind_input", NULL);
    void *d = dev_alloc(4096);
    int64_t xs[3] = {2, C + 1, 4};
    EXPECT(bind_in(p, "x", d, 3, xs), TLRT_ERR_ARGS, "tlrt_plan_bind_input: graph bcast: input x: dim 1 (C) is",
           "but param b has C = ");
    EXPECT(bind_in(p, "b", d, 2, bs), TLRT_ERR_ARGS, "b is a param, not an input: bind it with tlrt_plan_bind_param", NULL);
    EXPECT(bind_in(p, "y", d, 3, xs), TLRT_ERR_NOT_FOUND, "no input named 'y' (inputs: x)", NULL);
    EXPECT(bind_in(p, "x", NULL, 3, xs), TLRT_ERR_ARGS, NULL, NULL); /* C mismatch is seen before the NULL data */
    xs[1] = C;
    EXPECT(bind_in(p, "x", NULL, 3, xs), TLRT_ERR_INVALID, "input x: view->data is NULL", NULL);
    EXPECT(tlrt_plan_bind_input(p, "x", NULL), TLRT_ERR_INVALID, "input x: view is NULL", NULL);
    EXPECT(tlrt_plan_copy_output(p, "out", dummy, 4), TLRT_ERR_ARGS, "tlrt_plan_copy_output: graph bcast: output out has", "4 were asked for");
    EXPECT(tlrt_plan_output(p, "nope", &v), TLRT_ERR_NOT_FOUND, "no output named 'nope' (outputs: out)", NULL);
    tlrt_free(ctx, d);
    free(b);
    tlrt_plan_destroy(p);
}

/* A permuted input (x stored transposed) through a zero buffer into an intermediate, then scaled with
 * scalar args: two launches; every buffer is kept for the next run with the same shapes. */
static const char plan_chain[] =
    "graph chain\n"
    "sym R\n"
    "sym C\n"
    "input xt f32 C,R\n"
    "buffer zb f32 R,C zero\n"
    "buffer t f32 R,C -\n"
    "buffer y f32 R,C -\n"
    "launch plan_add cdiv(R*C,64) 1 1 3\n"
    "arg view xt perm 1,0 shape 1,R,C\n"
    "arg view zb shape 1,R,C\n"
    "arg view t shape 1,R,C\n"
    "launch plan_scale cdiv(C,32) R 1 4\n"
    "arg view t\n"
    "arg view y\n"
    "arg f32 0.5\n"
    "arg i32 R-C\n"
    "output y y\n"
    "endgraph\n";

static double *chain_ref(const float *xt, int64_t R, int64_t C) {
    double *ref = malloc((size_t)(R * C) * sizeof *ref);
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) ref[r * C + c] = (double)xt[c * R + r] * 0.5 + (double)(R - C);
    return ref;
}

static void test_run_chain(void) {
    TlrtPlan *p = make_plan(plan_chain);
    if (!p) return;
    int64_t R = 3 + (int64_t)((urand() + 1) * 10), C = 20 + (int64_t)((urand() + 1) * 30);
    size_t n = (size_t)(R * C);
    float *xt = rand_host(n);
    void *dx = upload(xt, n);
    int64_t xs[2] = {C, R};
    CHECK(bind_in(p, "xt", dx, 2, xs) == TLRT_OK);
    TlrtStatus st = tlrt_plan_run(p, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    double *ref = chain_ref(xt, R, C);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);
    /* every buffer stays for the next run; one with the same shapes reuses them, allocating nothing */
    CHECK(p->owned[1] && p->owned[2] && p->owned[3] && p->held[2] == n * 4);
    void *held[4] = {p->data[0], p->data[1], p->data[2], p->data[3]};
    CHECK(tlrt_plan_launch_count(p) == 2 && tlrt_plan_prepare_count(p) == 0);
    CHECK(tlrt_memset(ctx, p->data[3], 0xff, n * 4) == TLRT_OK); /* poison the output again */
    CHECK(tlrt_plan_run(p, NULL) == TLRT_OK);
    CHECK(p->data[1] == held[1] && p->data[2] == held[2] && p->data[3] == held[3]);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);

    /* a captured run: the launches are recorded, run by the graph, and replay on new input data */
    TlrtStream *s = NULL;
    CHECK(tlrt_stream_create(ctx, &s) == TLRT_OK);
    CHECK(tlrt_memset(ctx, p->data[3], 0xff, n * 4) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    st = tlrt_plan_run(p, s);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    TlrtGraph *gr = NULL;
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK && gr);
    float first = 0;
    CHECK(tlrt_memcpy_dtoh(ctx, &first, p->data[3], 4) == TLRT_OK);
    CHECK(isnan(first)); /* recorded, not run: the output is still poisoned */
    CHECK(p->data[1] == held[1] && p->data[2] == held[2] && p->data[3] == held[3]);
    CHECK(gr && tlrt_graph_launch(gr, s) == TLRT_OK);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);
    for (size_t i = 0; i < n; i++) xt[i] = (float)urand();
    CHECK(tlrt_memcpy_htod(ctx, dx, xt, n * sizeof *xt) == TLRT_OK);
    CHECK(gr && tlrt_graph_launch(gr, s) == TLRT_OK);
    free(ref);
    ref = chain_ref(xt, R, C);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);
    tlrt_graph_destroy(gr);

    /* CUDA (thread-local capture: no cuMemAlloc on the capturing thread) captures a plan that has run
     * with these shapes, allocating nothing; the emulator's context and stream, dressed as CUDA's,
     * take the CUDA paths of tlrt_plan_run */
    CHECK(tlrt_memset(ctx, p->data[3], 0xff, n * 4) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    ctx->kind = TLRT_DEVICE_CUDA;
    st = tlrt_plan_run(p, s);
    ctx->kind = TLRT_DEVICE_EMU;
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK && gr);
    CHECK(p->data[1] == held[1] && p->data[2] == held[2] && p->data[3] == held[3]);
    CHECK(gr && tlrt_graph_launch(gr, s) == TLRT_OK);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);
    tlrt_graph_destroy(gr);
    /* ... and refuses one with new shapes (its buffers would be allocated during the capture), before
     * anything happens: the last run's outputs are untouched */
    float *xt2 = rand_host(n + (size_t)C);
    void *dx2 = upload(xt2, n + (size_t)C);
    int64_t xs2[2] = {C, R + 1};
    CHECK(bind_in(p, "xt", dx2, 2, xs2) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    ctx->kind = TLRT_DEVICE_CUDA;
    EXPECT(tlrt_plan_run(p, s), TLRT_ERR_UNSUPPORTED, "tlrt_plan_run: graph chain: the stream is capturing and the plan has buffers to allocate",
           "run the plan once outside the capture with the same shapes and params first");
    ctx->kind = TLRT_DEVICE_EMU;
    CHECK(p->ran && p->data[2] == held[2] && p->shapes[2].sizes[0] == R);
    compare_output(p, "y", ref, n, 1e-6, 1e-6);
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK);
    tlrt_graph_destroy(gr);
    tlrt_stream_destroy(s);

    /* the next plain run, with the new shapes, reallocates */
    free(ref);
    ref = chain_ref(xt2, R + 1, C);
    CHECK(tlrt_plan_run(p, NULL) == TLRT_OK && p->held[2] == (n + (size_t)C) * 4 && p->held[3] == (n + (size_t)C) * 4);
    compare_output(p, "y", ref, n + (size_t)C, 1e-6, 1e-6);
    tlrt_free(ctx, dx);
    tlrt_free(ctx, dx2);
    free(xt);
    free(xt2);
    free(ref);
    tlrt_plan_destroy(p);
}

/* ---- prepares and pbuffers (docs/graphs.md section 7) */


/* Binds a fresh x [N, R, C], runs p (on stream s, NULL = default) and compares y with x + 2 w - 1
 * (unless the run is captured: then the caller replays and compares with prep_check). */
static double *prep_ref(const float *x, const float *w, int64_t N, int64_t R, int64_t C) {
    double *ref = malloc((size_t)(N * R * C) * sizeof *ref);
    for (int64_t i = 0; i < N * R * C; i++) ref[i] = (double)x[i] + 2.0 * (double)w[i % (R * C)] - 1.0;
    return ref;
}

typedef struct Prep { TlrtPlan *p; int64_t N, R, C; float *x, *w; void *dx; } Prep;

static void prep_input(Prep *t, int64_t N) {
    if (t->dx) tlrt_free(ctx, t->dx);
    free(t->x);
    t->N = N;
    size_t n = (size_t)(N * t->R * t->C);
    t->x = rand_host(n);
    t->dx = upload(t->x, n);
    int64_t xs[3] = {N, t->R, t->C};
    CHECK(bind_in(t->p, "x", t->dx, 3, xs) == TLRT_OK);
}

static void prep_param(Prep *t, int64_t R, int64_t C) {
    free(t->w);
    t->R = R, t->C = C;
    t->w = rand_host((size_t)(R * C));
    int64_t ws[2] = {R, C};
    CHECK(tlrt_plan_bind_param(t->p, "w", t->w, 2, ws) == TLRT_OK);
}

static void prep_check(Prep *t) {
    double *ref = prep_ref(t->x, t->w, t->N, t->R, t->C);
    CHECK(compare_output(t->p, "y", ref, (size_t)(t->N * t->R * t->C), 1e-6, 1e-6) == 0);
    free(ref);
}

static void prep_run(Prep *t) {
    TlrtStatus st = tlrt_plan_run(t->p, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    prep_check(t);
}

static void test_run_prepare(void) {
    Prep t = {.p = make_plan(plan_prep)};
    if (!t.p) return;
    TlrtPlan *p = t.p;
    CHECK(tlrt_plan_prepare_count(p) == 1 && tlrt_plan_launch_count(p) == 1 && tlrt_plan_prepare_count(NULL) == 0);
    CHECK(tlrt_plan_tensor_count(p, 0) == 2); /* a pbuffer is not bound */
    int ws = 3, y = 4;
    prep_param(&t, 2 + (int64_t)((urand() + 1) * 3), 20 + (int64_t)((urand() + 1) * 30));
    prep_input(&t, 2);
    CHECK(p->prepare_runs == 0); /* binding prepares nothing: the next run does */
    prep_run(&t);
    CHECK(p->prepare_runs == 1 && p->owned[ws] && p->held[ws] == (size_t)(t.R * t.C) * 4);
    void *ws_mem = p->data[ws];
    /* new input data, then a new batch size: the pbuffer persists and is not prepared again */
    prep_input(&t, 2);
    prep_run(&t);
    prep_input(&t, 3);
    prep_run(&t);
    CHECK(p->prepare_runs == 1 && p->data[ws] == ws_mem && p->held[y] == (size_t)(3 * t.R * t.C) * 4);
    /* rebinding the param (same shape) prepares again, into the same pbuffer */
    prep_param(&t, t.R, t.C);
    prep_run(&t);
    CHECK(p->prepare_runs == 2 && p->data[ws] == ws_mem);
    prep_run(&t);
    CHECK(p->prepare_runs == 2);
    /* a param of another shape: the pbuffer is reallocated and prepared (x follows C) */
    prep_param(&t, t.R + 1, t.C + 3);
    prep_input(&t, 2);
    prep_run(&t);
    CHECK(p->prepare_runs == 3 && p->held[ws] == (size_t)(t.R * t.C) * 4);

    /* a captured run after a rebinding: the emulator prepares at once, outside the graph, which
     * replays the launch only */
    prep_param(&t, t.R, t.C);
    TlrtStream *s = NULL;
    CHECK(tlrt_stream_create(ctx, &s) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    CHECK(tlrt_plan_run(p, s) == TLRT_OK);
    TlrtGraph *gr = NULL;
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK && gr);
    CHECK(p->prepare_runs == 4);
    CHECK(gr && tlrt_graph_launch(gr, s) == TLRT_OK);
    prep_check(&t);
    tlrt_graph_destroy(gr);
    /* CUDA may not prepare during a capture: refused after a rebinding, before anything happens ... */
    prep_param(&t, t.R, t.C);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    ctx->kind = TLRT_DEVICE_CUDA;
    EXPECT(tlrt_plan_run(p, s), TLRT_ERR_UNSUPPORTED, "tlrt_plan_run: graph prep: the stream is capturing and the plan has prepares to run",
           "run the plan once outside the capture");
    ctx->kind = TLRT_DEVICE_EMU;
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK);
    tlrt_graph_destroy(gr);
    CHECK(p->prepare_runs == 4 && p->ran);
    /* ... and captures once a plain run prepared */
    prep_run(&t);
    CHECK(p->prepare_runs == 5);
    CHECK(tlrt_memset(ctx, p->data[y], 0xff, p->held[y]) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    ctx->kind = TLRT_DEVICE_CUDA;
    TlrtStatus st = tlrt_plan_run(p, s);
    ctx->kind = TLRT_DEVICE_EMU;
    CHECK(st == TLRT_OK);
    CHECK(tlrt_graph_end_capture(s, &gr) == TLRT_OK && gr);
    CHECK(p->prepare_runs == 5 && gr && tlrt_graph_launch(gr, s) == TLRT_OK);
    prep_check(&t);
    tlrt_graph_destroy(gr);
    tlrt_stream_destroy(s);

    /* a prepare that fails (the param is fine, the kernel faults on nothing here: use a bad grid) is
     * covered by run_bad; destroy frees the pbuffer and the params (ASan / valgrind) */
    tlrt_free(ctx, t.dx);
    free(t.x);
    free(t.w);
    tlrt_plan_destroy(p);
}

/* f16 buffers: 2 bytes per element (the emulator faults on any access past an allocation). */
static void test_run_half(void) {
    static const char text[] =
        "graph half\n"
        "sym N\n"
        "input x f32 N\n"
        "buffer h bf16 N -\n"
        "buffer h2 f16 N -\n"
        "buffer y f32 N -\n"
        "launch plan_to_half cdiv(N,64) 1 1 2\n"
        "arg view x\n"
        "arg view h2\n"
        "launch plan_from_half cdiv(N,64) 1 1 2\n"
        "arg view h2\n"
        "arg view y\n"
        "output y y\n"
        "endgraph\n";
    TlrtPlan *p = make_plan(text);
    if (!p) return;
    int64_t N = 100 + (int64_t)((urand() + 1) * 500);
    float *x = rand_host((size_t)N);
    void *dx = upload(x, (size_t)N);
    CHECK(bind_in(p, "x", dx, 1, &N) == TLRT_OK);
    TlrtStatus st = tlrt_plan_run(p, NULL);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(ctx));
    CHECK(p->shapes[1].bytes == (size_t)(2 * N) && p->shapes[2].bytes == (size_t)(2 * N) && p->shapes[3].bytes == (size_t)(4 * N));
    double *ref = malloc((size_t)N * sizeof *ref);
    for (int64_t i = 0; i < N; i++) ref[i] = x[i];
    compare_output(p, "y", ref, (size_t)N, 1e-4, 1e-3);
    free(ref);
    free(x);
    tlrt_free(ctx, dx);
    tlrt_plan_destroy(p);
}

/* A grid dim of 0 skips the launch: the output is never written, so it still holds the emulator's
 * poison (NaN), which is what makes the comparisons above meaningful. */
static void test_run_skip(void) {
    static const char text[] =
        "graph skip\n"
        "sym N\n"
        "input x f32 1,1,N\n"
        "buffer y f32 1,1,N -\n"
        "buffer z f32 N zero\n"
        "launch plan_add N-N 1 1 3\n"
        "arg view x\n"
        "arg view x\n"
        "arg view y\n"
        "output y y\n"
        "output z z\n"
        "endgraph\n";
    TlrtPlan *p = make_plan(text);
    if (!p) return;
    int64_t xs[3] = {1, 1, 37};
    float *x = rand_host(37);
    void *dx = upload(x, 37);
    CHECK(bind_in(p, "x", dx, 3, xs) == TLRT_OK);
    CHECK(tlrt_plan_run(p, NULL) == TLRT_OK && p->skip[0] && p->grids[0][0] == 0);
    float y[37], z[37];
    CHECK(tlrt_plan_copy_output(p, "y", y, sizeof y) == TLRT_OK);
    CHECK(tlrt_plan_copy_output(p, "z", z, sizeof z) == TLRT_OK);
    int nan = 0, zero = 0;
    for (int i = 0; i < 37; i++) nan += isnan(y[i]), zero += z[i] == 0.0f && !signbit(z[i]);
    CHECK(nan == 37 && zero == 37);
    free(x);
    tlrt_free(ctx, dx);
    tlrt_plan_destroy(p);
}

/* Runs `text` with input x bound to sizes xs (rank r); the run must fail with status st and `want`. */
static void run_bad(const char *text, const int64_t *xs, int r, TlrtStatus want_st, const char *want, const char *want2, int line) {
    TlrtPlan *p = make_plan(text);
    if (!p) return;
    void *d = dev_alloc(1 << 16);
    TlrtStatus st = bind_in(p, "x", d, r, xs);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  line %d: bind: %s\n", line, tlrt_last_error(ctx));
    expect(tlrt_plan_run(p, NULL), want_st, want, want2, line);
    TlrtView v;
    expect(tlrt_plan_output(p, "o", &v), TLRT_ERR_INVALID, "no successful run yet", NULL, line);
    for (int t = 0; t < p->def->ntensors; t++) CHECK(!p->owned[t]); /* nothing left allocated */
    tlrt_free(ctx, d);
    tlrt_plan_destroy(p);
}
#define RUN_BAD(text, xs, r, st, want, want2) run_bad((text), (xs), (r), (st), (want), (want2), __LINE__)

static void test_run_errors(void) {
    int64_t n1[1] = {7}, n2[2] = {4, 4}, big[1] = {100000};
    RUN_BAD("graph e\nsym N\ninput x f32 N\ncheck N 8\noutput o x\nendgraph\n", n1, 1, TLRT_ERR_ARGS,
            "tlrt_plan_run: graph e: check N == 8 failed: 7 != 8 (N=7)", NULL);
    RUN_BAD("graph e\nsym N\ndef P (N-10)/2+1\ninput x f32 N\noutput o x\nendgraph\n", n1, 1, TLRT_ERR_ARGS,
            "graph e: def P = (N-10)/2+1 is -1 with N=7: a dim must be >= 0", NULL);
    RUN_BAD("graph e\nsym N\ndef P N*N*N*N*N\ninput x f32 N\noutput o x\nendgraph\n", big, 1, TLRT_ERR_ARGS,
            "graph e: def P: int64 overflow in 'N*N*N*N*N' (1000000000000000 * 100000) with N=100000", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N\nbuffer y f32 N,N,N,N -\noutput o y\nendgraph\n", big, 1, TLRT_ERR_ARGS,
            "graph e: buffer y: its size (100000,100000,100000,100000) x 4 bytes overflows int64", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N\nbuffer y f32 N-8 -\noutput o y\nendgraph\n", n1, 1, TLRT_ERR_ARGS,
            "graph e: buffer y: dim 0 = N-8 is -1 with N=7: a dim must be >= 0", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N\nbuffer y f32 N/0 -\noutput o y\nendgraph\n", n1, 1, TLRT_ERR_ARGS,
            "buffer y: dim 0: division by zero in 'N/0' (7 / 0) with N=7", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N+1\noutput o x\nendgraph\n", n2, 2, TLRT_ERR_ARGS,
            "graph e: input x: dim 1 is 4, but the plan says N+1 = 5 with N=4", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nalias r x N\noutput o r\nendgraph\n", n2, 2, TLRT_ERR_ARGS,
            "graph e: alias r: 4 elements (4), but its source x has 16 (4,4)", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N\nparam w f32 N\noutput o x\nendgraph\n", n1, 1, TLRT_ERR_ARGS,
            "tlrt_plan_run: graph e: param w is not bound (tlrt_plan_bind_param)", NULL);
    /* launches: grid, scalar and broadcast errors name the launch; nothing runs */
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 70000 1 4\narg view x\narg view y\narg f32 1\narg i32 0\n"
            "output o y\nendgraph\n", n2, 2, TLRT_ERR_ARGS, "graph e: launch #0 plan_scale: grid y = 70000 is 70000: above CUDA's limit of 65535", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale N-N-1 1 1 4\narg view x\narg view y\narg f32 1\narg i32 0\n"
            "output o y\nendgraph\n", n2, 2, TLRT_ERR_ARGS, "launch #0 plan_scale: grid x = N-N-1 is -1 with N=4: negative", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 1 1 4\narg view x\narg view y\narg f32 1\narg i32 N*1000000000\n"
            "output o y\nendgraph\n", n2, 2, TLRT_ERR_ARGS, "launch #0 plan_scale: arg 3 (i32) = N*1000000000 is 4000000000: does not fit in i32", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 1 1 4\narg view x shape 3,N\narg view y\narg f32 1\narg i32 0\n"
            "output o y\nendgraph\n", n2, 2, TLRT_ERR_ARGS,
            "graph e: launch #0 plan_scale: arg 0 (view of x): x (4,4) cannot broadcast to the shape: its dim 0 is 4, the shape's dim 0 (3) is 3", NULL);
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 1 1 4\narg view x\narg view y shape N,N-N-1\narg f32 1\narg i32 0\n"
            "output o y\nendgraph\n", n2, 2, TLRT_ERR_ARGS, "arg 1 (view of y): shape dim 1 = N-N-1 is -1: a dim must be >= 0", NULL);
    /* a second launch's error: the first did not run either */
    RUN_BAD("graph e\nsym N\ninput x f32 N,N\nbuffer y f32 N,N -\nlaunch plan_scale 1 N 1 4\narg view x\narg view y\narg f32 1\narg i32 0\n"
            "launch plan_scale 1 N 1 4\narg view y perm 1,0 shape 2,N\narg view y\narg f32 1\narg i32 0\noutput o y\nendgraph\n",
            n2, 2, TLRT_ERR_ARGS, "launch #1 plan_scale: arg 0 (view of y): y (4,4 after perm) cannot broadcast", NULL);
    /* an error tlrt_launch finds (the kernel's dims D0..D2 disagree) comes back naming the launch */
    int64_t x3[3] = {1, 1, 7};
    RUN_BAD("graph e\nsym N\ninput x f32 1,1,N\nbuffer y f32 1,1,N+1 -\nlaunch plan_add 1 1 1 3\narg view x\narg view x\narg view y\n"
            "output o y\nendgraph\n", x3, 3, TLRT_ERR_ARGS, "tlrt_plan_run: graph e: launch #0 plan_add: tlrt_launch plan_add: dim D2", NULL);

    /* two inputs that share a symbol disagree: seen by the run, not by the binding (a stale one may
     * be rebound next) */
    TlrtPlan *p = make_plan("graph two\nsym N\ninput a f32 N\ninput b f32 N\noutput o a\nendgraph\n");
    if (p) {
        void *d = dev_alloc(64);
        int64_t s3 = 3, s4 = 4;
        CHECK(bind_in(p, "a", d, 1, &s3) == TLRT_OK && bind_in(p, "b", d, 1, &s4) == TLRT_OK);
        EXPECT(tlrt_plan_run(p, NULL), TLRT_ERR_ARGS, "graph two: input b: dim 0 (N) is 4, but input a has N = 3 (dim 0)", NULL);
        CHECK(bind_in(p, "b", d, 1, &s3) == TLRT_OK && tlrt_plan_run(p, NULL) == TLRT_OK);
        /* an output that is an input is the input's memory */
        TlrtView v;
        CHECK(tlrt_plan_output(p, "o", &v) == TLRT_OK && v.data == d && v.sizes[0] == 3);
        tlrt_free(ctx, d);
        tlrt_plan_destroy(p);
    }
    /* two params that share a symbol are checked at bind */
    p = make_plan("graph pp\nsym K\ninput x f32 K\nparam a f32 K,2\nparam b f32 3,K\noutput o x\nendgraph\n");
    if (p) {
        float h[64] = {0};
        int64_t as[2] = {4, 2}, bs[2] = {3, 5}, bl[2] = {2, 4};
        CHECK(tlrt_plan_bind_param(p, "a", h, 2, as) == TLRT_OK);
        EXPECT(tlrt_plan_bind_param(p, "b", h, 2, bs), TLRT_ERR_ARGS, "param b: dim 1 (K) is 5, but param a has K = 4 (dim 0)", NULL);
        EXPECT(tlrt_plan_bind_param(p, "b", h, 2, bl), TLRT_ERR_ARGS, "param b: dim 0 is 2, the plan declares 3 (3,K)", NULL);
        int64_t x5 = 5;
        void *d = dev_alloc(64);
        EXPECT(bind_in(p, "x", d, 1, &x5), TLRT_ERR_ARGS, "input x: dim 0 (K) is 5, but param a has K = 4 (dim 0)", NULL);
        tlrt_free(ctx, d);
        tlrt_plan_destroy(p);
    }
    /* a symbol repeated within one tensor */
    p = make_plan("graph sq\nsym N\ninput x f32 N,N\noutput o x\nendgraph\n");
    if (p) {
        void *d = dev_alloc(64);
        int64_t s[2] = {2, 3};
        EXPECT(bind_in(p, "x", d, 2, s), TLRT_ERR_ARGS, "input x: dims 0 and 1 are both N but are 2 and 3", NULL);
        tlrt_free(ctx, d);
        tlrt_plan_destroy(p);
    }
    /* create errors */
    TlrtPlan *q = NULL;
    EXPECT(rt_plan_create_from_text(mod, "graph g\n", &q), TLRT_ERR_LOAD, "plan line 1: graph g: no 'endgraph'", NULL);
    CHECK(q == NULL);
    EXPECT(tlrt_plan_create(mod, NULL, &q), TLRT_ERR_NOT_FOUND, "tlrt_plan_create: the module has 0 graphs: name one", NULL);
    EXPECT(tlrt_plan_create(mod, "g", &q), TLRT_ERR_NOT_FOUND, "no graph 'g' in the module (graphs: none)", NULL);
    CHECK(tlrt_plan_create(NULL, "g", &q) == TLRT_ERR_INVALID && tlrt_plan_run(NULL, NULL) == TLRT_ERR_INVALID);
    CHECK(tlrt_plan_launch_count(NULL) == 0 && tlrt_plan_tensor_count(NULL, 0) == 0);
    tlrt_plan_destroy(NULL);
}

/* tlrt_plan_create on a module whose metadata carries graphs: the .so of plan_kernels.tile has none
 * (until the compiler writes plans), so the graphs of the same metadata text, parsed by the reader,
 * are moved into the loaded module. */
static void test_module_graphs(void) {
    char two[4096];
    snprintf(two, sizeof two, "%s%s", plan_chain, "graph id\nsym N\ninput x f32 N\noutput o x\nendgraph\n");
    char *text = meta_with(two);
    RtMeta m;
    char err[512];
    bool ok = rt_meta_parse(text, &m, err, sizeof err);
    CHECK(ok && m.ngraphs == 2);
    free(text);
    if (!ok) return;
    mod->meta.graphs = m.graphs;
    mod->meta.ngraphs = m.ngraphs;
    m.graphs = NULL, m.ngraphs = 0;
    rt_meta_free(&m);
    TlrtPlan *p = NULL;
    EXPECT(tlrt_plan_create(mod, NULL, &p), TLRT_ERR_NOT_FOUND, "the module has 2 graphs (chain, id): name one", NULL);
    EXPECT(tlrt_plan_create(mod, "ch", &p), TLRT_ERR_NOT_FOUND, "no graph 'ch' in the module (graphs: chain, id)", NULL);
    CHECK(tlrt_plan_create(mod, "chain", &p) == TLRT_OK && p && p->def == &mod->meta.graphs[0]);
    if (p) {
        int64_t R = 5, C = 33;
        float *xt = rand_host((size_t)(R * C));
        void *dx = upload(xt, (size_t)(R * C));
        int64_t xs[2] = {C, R};
        CHECK(bind_in(p, "xt", dx, 2, xs) == TLRT_OK && tlrt_plan_run(p, NULL) == TLRT_OK);
        double *ref = chain_ref(xt, R, C);
        compare_output(p, "y", ref, (size_t)(R * C), 1e-6, 1e-6);
        free(ref);
        free(xt);
        tlrt_free(ctx, dx);
        tlrt_plan_destroy(p);
    }
    /* the module frees its graphs when unloaded (checked by ASan / valgrind) */
}

/* ---- the CUDA back end against a fake driver (Inputs/plan_fake_cuda.c: fake_libcuda.c where
 * cuMemAlloc/cuMemFree/cuMemsetD8 fail while a stream captures, as in CUDA's thread-local mode) */

static const char fake_plan_kernels[] =
    "tilec-metadata 1\n"
    "kernel plan_add variant_of=plan_add num_warps=4 block=128 smem=0 smem_dynamic=0\n"
    "param 0 a view f32 rank=3 facts=-\nparam 1 b view f32 rank=3 facts=-\nparam 2 y view f32 rank=3 facts=-\n"
    "kernel plan_scale variant_of=plan_scale num_warps=4 block=128 smem=0 smem_dynamic=0\n"
    "param 0 x view f32 rank=2 facts=-\nparam 1 y view f32 rank=2 facts=-\nparam 2 s scalar f32 facts=-\n"
    "param 3 t scalar i32 facts=-\n";

static void child_fake_cuda(const char *lib) {
    setenv("TILEC_LIBCUDA", lib, 1);
    TlrtContext *c = NULL;
    TlrtStatus st = tlrt_create(TLRT_DEVICE_CUDA, &c);
    CHECK(st == TLRT_OK);
    if (st) {
        fprintf(stderr, "  fake driver: %s\n", tlrt_last_error(c));
        tlrt_destroy(c);
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    int (*allocs)(void) = h ? (int (*)(void))dlsym(h, "fake_alloc_count") : NULL;
    int (*frees)(void) = h ? (int (*)(void))dlsym(h, "fake_free_count") : NULL;
    int (*launches)(void) = h ? (int (*)(void))dlsym(h, "fake_launch_count") : NULL;
    int (*replays)(void) = h ? (int (*)(void))dlsym(h, "fake_graph_replays") : NULL;
    CHECK(allocs && frees && launches && replays);
    /* the PTX: metadata (kernels, then the graph block of plan_prep), then the entries */
    size_t cap = sizeof fake_plan_kernels + 3 * sizeof plan_prep + 256, len = 0;
    char *ptx = malloc(cap);
    for (const char *l = fake_plan_kernels; *l;) {
        size_t n = strcspn(l, "\n") + 1;
        len += (size_t)snprintf(ptx + len, cap - len, "// %.*s", (int)n, l);
        l += n;
    }
    for (const char *l = plan_prep; *l;) {
        size_t n = strcspn(l, "\n") + 1;
        len += (size_t)snprintf(ptx + len, cap - len, "// %.*s", (int)n, l);
        l += n;
    }
    snprintf(ptx + len, cap - len, "// end\n.version 8.0\n.target sm_90\n.address_size 64\n"
                                   ".visible .entry plan_add(\n.visible .entry plan_scale(\n");
    TlrtModule *m = NULL;
    TlrtPlan *p = NULL;
    st = tlrt_module_load_ptx(c, ptx, &m);
    free(ptx);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(c));
    if (!st) CHECK(tlrt_plan_create(m, "prep", &p) == TLRT_OK && p);
    if (!p || !allocs || !frees || !launches || !replays) {
        tlrt_module_unload(m);
        tlrt_destroy(c);
        return;
    }
    float w[3 * 40] = {0};
    int64_t wsz[2] = {3, 40}, xs[3] = {2, 3, 40};
    void *dx = NULL;
    TlrtStream *s = NULL;
    TlrtGraph *g = NULL;
    CHECK(tlrt_malloc(c, 2 * 3 * 40 * 4, &dx) == TLRT_OK && tlrt_stream_create(c, &s) == TLRT_OK);
    TlrtArg xa = tlrt_arg_view(dx, 3, xs);
    CHECK(tlrt_plan_bind_param(p, "w", w, 2, wsz) == TLRT_OK && tlrt_plan_bind_input(p, "x", &xa.u.view) == TLRT_OK);
    /* a capture of a plan that never ran is refused before anything happens (it would allocate) */
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    int a0 = allocs(), l0 = launches();
    CHECK(tlrt_plan_run(p, s) == TLRT_ERR_UNSUPPORTED && CONTAINS(tlrt_last_error(c), "has buffers to allocate"));
    CHECK(tlrt_graph_end_capture(s, &g) == TLRT_OK && g);
    tlrt_graph_destroy(g);
    CHECK(allocs() == a0 && launches() == l0);
    /* the first run allocates the pbuffer and the buffer and launches the prepare and the launch */
    CHECK(tlrt_plan_run(p, s) == TLRT_OK && allocs() == a0 + 2 && launches() == l0 + 2);
    /* the next ones allocate and free nothing and launch once */
    int f0 = frees();
    CHECK(tlrt_plan_run(p, s) == TLRT_OK && tlrt_plan_run(p, s) == TLRT_OK);
    CHECK(allocs() == a0 + 2 && frees() == f0 && launches() == l0 + 4);
    /* now a capture works: it records the one launch (cuMemAlloc would fail in it), and replays */
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    st = tlrt_plan_run(p, s);
    CHECK(st == TLRT_OK);
    if (st) fprintf(stderr, "  %s\n", tlrt_last_error(c));
    CHECK(tlrt_graph_end_capture(s, &g) == TLRT_OK && g);
    CHECK(launches() == l0 + 4 && g && tlrt_graph_launch(g, s) == TLRT_OK && tlrt_graph_launch(g, s) == TLRT_OK);
    CHECK(replays() == 2 && launches() == l0 + 6);
    tlrt_graph_destroy(g);
    /* a rebound param needs the prepare: refused in a capture, run by the next plain run */
    CHECK(tlrt_plan_bind_param(p, "w", w, 2, wsz) == TLRT_OK);
    CHECK(tlrt_graph_begin_capture(s) == TLRT_OK);
    CHECK(tlrt_plan_run(p, s) == TLRT_ERR_UNSUPPORTED && CONTAINS(tlrt_last_error(c), "has prepares to run"));
    CHECK(tlrt_graph_end_capture(s, &g) == TLRT_OK);
    tlrt_graph_destroy(g);
    int l1 = launches();
    CHECK(tlrt_plan_run(p, s) == TLRT_OK && launches() == l1 + 2);
    /* destroy frees everything the plan allocated: the two buffers and the param */
    tlrt_plan_destroy(p);
    CHECK(tlrt_free(c, dx) == TLRT_OK);
    CHECK(allocs() == frees());
    tlrt_stream_destroy(s);
    tlrt_module_unload(m);
    tlrt_destroy(c);
}

/* Runs child_fake_cuda in a child process (the driver table is loaded once per process); its checks
 * count as one here. SKIP without a C compiler. */
static void test_fake_cuda(void) {
    const char *cc = getenv("TILEC_CC");
    if (!cc || !*cc) cc = "cc";
    char lib[160], cmd[1024];
    snprintf(lib, sizeof lib, "%s/libplanfakecuda.so", workdir);
    snprintf(cmd, sizeof cmd, "%s -shared -fPIC -o %s %s/tests/unit/Inputs/plan_fake_cuda.c 2>&1", cc, lib, TILEC_SOURCE_DIR);
    if (system(cmd) != 0) {
        printf("SKIP: fake CUDA driver (no C compiler)\n");
        return;
    }
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        check_passed = check_failed = 0;
        child_fake_cuda(lib);
        printf("  fake CUDA driver: %d passed, %d failed\n", check_passed, check_failed);
        fflush(stdout);
        _exit(check_failed ? 1 : 0);
    }
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    CHECK(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(lib);
}

/* window records (concat placement): a box of a buffer, strided like it; refused where a tensor must be
 * contiguous (an alias's or window's source, an output) and outside its source at run time. */
static void test_window(void) {
    static const char plan[] = "graph w\nsym N\ninput x f32 N,N\nbuffer y f32 N,8 -\nwindow a y 0,2 N,3\n"
                               "window b y 1,4 N-1,4\nlaunch plan_scale 1 1 1 4\narg view x\narg view a\narg f32 1\narg i32 0\n"
                               "launch plan_scale 1 1 1 4\narg view b perm 1,0\narg view x\narg f32 1\narg i32 0\n"
                               "output o y\nendgraph\n";
    RtPlanDef g;
    char err[1024] = "";
    bool ok = rt_plan_parse_text(plan, &mod->meta, &g, err, sizeof err);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CHECK(g.tensors[2].kind == RT_PLAN_WINDOW && g.tensors[2].source == 1 && g.tensors[2].rank == 2);
    int64_t xs[2] = {4, 4};
    const int64_t *bound[4] = {xs, NULL, NULL, NULL};
    int64_t vals[1];
    RtPlanShape shapes[4];
    ok = rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err);
    CHECK(ok && shapes[2].sizes[0] == 4 && shapes[2].sizes[1] == 3 && shapes[2].strides[0] == 8 && shapes[2].strides[1] == 1 &&
          shapes[2].offset == 2 && shapes[3].sizes[0] == 3 && shapes[3].offset == 12 && shapes[1].offset == 0);
    unsigned grid[3];
    bool skip;
    TlrtArg args[4];
    CHECK(ok && rt_plan_launch_args(&g, 0, vals, shapes, NULL, grid, &skip, args, err, sizeof err) &&
          args[1].u.view.strides[0] == 8 && args[1].u.view.strides[1] == 1 && args[1].u.view.sizes[1] == 3);
    CHECK(ok && rt_plan_launch_args(&g, 1, vals, shapes, NULL, grid, &skip, args, err, sizeof err) &&
          args[0].u.view.strides[0] == 1 && args[0].u.view.strides[1] == 8 && args[0].u.view.sizes[0] == 4);
    xs[0] = xs[1] = 9; /* y is [9, 8]: b's 4 columns from 4 fit, a's fit; N-1 rows from 1 fit */
    CHECK(rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err));
    rt_plan_def_free(&g);
    ok = rt_plan_parse_text("graph w\nsym N\ninput x f32 N,N\nbuffer y f32 N,8 -\nwindow a y 0,6 N,3\noutput o y\nendgraph\n",
                            &mod->meta, &g, err, sizeof err);
    CHECK(ok && !rt_plan_eval_shapes(&g, bound, vals, shapes, err, sizeof err) &&
          CONTAINS(err, "graph w: window a: dim 1 covers 6..8, outside its source y (dim 1 is 8)"));
    if (ok) rt_plan_def_free(&g);
    plan_bad("graph w\nsym N\ninput x f32 N\nbuffer y f32 N -\nwindow a y 0 N\nwindow c a 0 N\noutput o y\nendgraph\n",
             "window c: its source a is a window (strided): name the window's source");
    plan_bad("graph w\nsym N\ninput x f32 N\nbuffer y f32 N -\nwindow a y 0 N\nalias c a N\noutput o y\nendgraph\n",
             "alias c: its source a is a window");
    plan_bad("graph w\nsym N\ninput x f32 N\nbuffer y f32 N -\nwindow a y 0 N\noutput o a\nendgraph\n",
             "output o: a is a window (strided); an output is contiguous");
    plan_bad("graph w\nsym N\ninput x f32 N\nbuffer y f32 N -\nwindow a y 0,0 N\noutput o y\nendgraph\n",
             "window a: 2 offsets and 1 dims for a source of rank 1 (all equal)");
    plan_bad("graph w\nsym N\ninput x f32 N\nbuffer y f32 N -\nwindow a y 0 N 1\noutput o y\nendgraph\n",
             "a window record is 'window NAME SOURCE OFFSETS DIMS'");
}

int main(void) {
    const char *seed = getenv("TILEC_SEED");
    rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    if (!rng) rng = 1;
    printf("seed %" PRIu64 " (TILEC_SEED=%" PRIu64 " replays)\n", rng, rng);
    snprintf(workdir, sizeof workdir, "/tmp/tilec_plan_XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_fake_cuda(); /* first: fork before the emulator starts any thread */
    if (tlrt_create(TLRT_DEVICE_EMU, &ctx) != TLRT_OK) {
        fprintf(stderr, "no emulator: %s\n", tlrt_last_error(ctx));
        return 1;
    }
    const char *so = compile_tile("tests/unit/Inputs/plan_kernels.tile", "plan_kernels", NULL);
    CHECK(so != NULL);
    if (so) CHECK(tlrt_module_load(ctx, so, &mod) == TLRT_OK);
    if (so) unlink(so);
    /* the same kernels' metadata as text (tilec --emit=meta) */
    char path[512];
    snprintf(path, sizeof path, "%s/tests/unit/Inputs/plan_kernels.tile", TILEC_SOURCE_DIR);
    size_t len;
    char *src = read_file(path, &len);
    TlCompileOptions opt;
    tl_options_init(&opt);
    opt.emit = TL_EMIT_META;
    opt.target = TL_TARGET_HOST;
    size_t mlen = 0;
    CHECK(src && tl_compile(path, src, len, &opt, &meta_text, &mlen) == TL_OK && meta_text && strstr(meta_text, "\nend\n"));
    free(src);
    if (mod && meta_text) {
        test_expr();
        test_parse_good();
        test_parse_bad();
        test_meta_graph();
        test_mutations();
        test_run_bcast();
        test_run_chain();
        test_run_prepare();
        test_run_half();
        test_run_skip();
        test_run_errors();
        test_window();
        test_module_graphs();
    }
    free(meta_text);
    tlrt_module_unload(mod);
    tlrt_destroy(ctx);
    rmdir(workdir);
    return check_summary();
}

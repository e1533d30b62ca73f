/* tilec-onnx: runs ONNX models and ONNX's own test cases through tilec (docs/onnx.md).
 *   tilec-onnx run CASE_DIR | MODEL.onnx [INPUT.pb...] [--expect OUTPUT.pb...]
 *   tilec-onnx suite DIR... [--must-pass FILE] [--filter SUBSTR] [-j N] [--timeout S] [-q]
 *   tilec-onnx import MODEL.onnx        (the imported graph IR, before any lowering)
 * Exit status: run: 0 pass (or ran, without expected outputs), 1 fail, 3 skipped (unsupported); suite: 0 when every must-pass case
 * passed, else 1; import: 0 ok, 1 errors; 2 usage errors; 3 I/O errors (import). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "case.h"
#include "ir/ir.h"
#include "onnx/onnx_import.h"
#include "suite.h"

static void usage(FILE *f) {
    fputs("usage: tilec-onnx run CASE_DIR [options]\n"
          "       tilec-onnx run MODEL.onnx [INPUT.pb...] [--expect OUTPUT.pb...] [options]\n"
          "       tilec-onnx suite DIR... [--must-pass FILE] [--filter SUBSTR] [-j N] [--timeout S] [-q]\n"
          "       tilec-onnx import MODEL.onnx\n"
          "\n"
          "run     compile the model with tilec, run it on the inputs (a case directory's\n"
          "        test_data_set_N/input_K.pb, or the given files, in graph-input order) and compare\n"
          "        with the expected outputs (output_K.pb, or --expect files; none: print the outputs).\n"
          "        Prints PASS/SKIP/FAIL with the max abs/rel error. float32: rtol 1e-3, atol 1e-5.\n"
          "suite   every case directory (holding model.onnx) under each DIR, each in a child process;\n"
          "        one line per case, then the counts and the skip reasons tallied\n"
          "import  print the graph IR the importer builds (no lowering, no code generation)\n"
          "\n"
          "options:\n"
          "  --device=emu|cuda   run on the SIMT emulator (default; host .so) or a GPU (PTX)\n"
          "  --mcpu=SM           CUDA: the PTX target (default: the compiler's)\n"
          "  -v                  print compile diagnostics and details\n"
          "  --must-pass FILE    suite: cases that must pass (one per line, e.g. node/test_relu)\n"
          "  --filter SUBSTR     suite: only cases whose name contains SUBSTR\n"
          "  -j N                suite: run N cases at once (default 1)\n"
          "  --timeout S         suite: seconds per case (default 300; 0 = none)\n"
          "  -q                  suite: print only failures, must-pass skips and the summary\n"
          "\n"
          "exit status: run: 0 pass, 1 fail, 3 skipped; suite: 0 every must-pass case passed, 1 not;\n"
          "             import: 0 ok, 1 errors; 2 usage errors\n",
          f);
}

static bool read_all(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    bool ok = buf && !ferror(f);
    fclose(f);
    if (!ok) free(buf);
    *data = ok ? buf : NULL;
    *len = ok ? n : 0;
    return ok;
}

static int cmd_import(const char *path) {
    char *bytes;
    size_t len;
    if (!read_all(path, &bytes, &len)) {
        fprintf(stderr, "tilec-onnx: cannot read %s: %s\n", path, strerror(errno));
        return 3;
    }
    IrModule *m = ir_module_new();
    DiagEngine *d = diag_new(stderr);
    Func *f = onnx_import(m, d, path, bytes, len, NULL, true);
    int rc = 1;
    if (f) {
        StrBuf sb = {0};
        ir_print_module(m, &sb, NULL);
        fwrite(sb.data, 1, sb.len, stdout);
        sb_free(&sb);
        rc = 0;
    }
    diag_free(d);
    ir_module_free(m);
    free(bytes);
    return rc;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    SuiteOptions so = {.jobs = 1, .timeout_s = 300};
    so.co.device = TLRT_DEVICE_EMU;
    const char **pos = calloc((size_t)argc, sizeof *pos), **expect = calloc((size_t)argc, sizeof *expect);
    int npos = 0, nexpect = 0;
    bool verbose = false, in_expect = false;
    if (!pos || !expect) return 2;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v")) verbose = true;
        else if (!strcmp(a, "-q")) so.quiet = true;
        else if (!strcmp(a, "--device=emu")) so.co.device = TLRT_DEVICE_EMU;
        else if (!strcmp(a, "--device=cuda")) so.co.device = TLRT_DEVICE_CUDA;
        else if (!strncmp(a, "--mcpu=", 7)) so.co.mcpu = a + 7;
        else if (!strcmp(a, "--expect")) in_expect = true;
        else if ((!strcmp(a, "--must-pass") || !strcmp(a, "--filter") || !strcmp(a, "-j") || !strcmp(a, "--timeout")) && next) {
            char *end = NULL;
            if (!strcmp(a, "--must-pass")) so.must_pass = next;
            else if (!strcmp(a, "--filter")) so.filter = next;
            else if (!strcmp(a, "-j")) so.jobs = (int)strtol(next, &end, 10);
            else so.timeout_s = (int)strtol(next, &end, 10);
            if (end && (*end || end == next || so.jobs < 1 || so.jobs > 256 || so.timeout_s < 0)) {
                fprintf(stderr, "tilec-onnx: bad value for %s: '%s'\n", a, next);
                return 2;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tilec-onnx: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (in_expect) {
            expect[nexpect++] = a;
        } else {
            pos[npos++] = a;
        }
    }
    so.co.log = verbose ? stderr : NULL;
    int rc = 2;
    if (!strcmp(cmd, "import") && npos == 1) {
        rc = cmd_import(pos[0]);
    } else if (!strcmp(cmd, "suite") && npos >= 1) {
        so.dirs = pos;
        so.ndirs = npos;
        rc = suite_run(&so);
    } else if (!strcmp(cmd, "run") && npos >= 1) {
        CaseResult r;
        if (ends_with(pos[0], ".onnx")) {
            so.co.print_outputs = nexpect == 0;
            case_run_files(pos[0], pos + 1, npos - 1, expect, nexpect, &so.co, &r);
        } else if (npos == 1 && nexpect == 0) {
            case_run_dir(pos[0], &so.co, &r);
        } else {
            fprintf(stderr, "tilec-onnx: run takes a case directory, or MODEL.onnx with .pb files\n");
            free(pos);
            free(expect);
            return 2;
        }
        static const char *names[] = {"PASS", "SKIP", "FAIL"};
        if (r.status == CASE_PASS && so.co.print_outputs)
            printf("RAN %s (%d launches; no expected outputs given)\n", pos[0], r.launches);
        else if (r.status == CASE_PASS)
            printf("PASS %s (%d launches, %ld values compared, max abs err %.3g, max rel err %.3g)\n", pos[0],
                   r.launches, r.compared, r.max_abs, r.max_rel);
        else
            printf("%s %s: %s\n", names[r.status], pos[0], r.reason);
        rc = r.status == CASE_PASS ? 0 : r.status == CASE_SKIP ? 3 : 1;
    } else {
        usage(stderr);
    }
    free(pos);
    free(expect);
    return rc;
}

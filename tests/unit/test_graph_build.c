/* Unit tests of graph/graph_build.h, used directly as the ONNX importer uses it: each op's shape rule
 * (literal and symbolic dims, derived symbols and their reuse, runtime checks), every error message,
 * poison propagation, the function attributes, verification and the IR text round trip. */
#include "graph/graph_build.h"
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "ir/ir.h"

typedef struct Capture {
    char *buf;
    size_t len;
    FILE *f;
    DiagEngine *d;
} Capture;

static void cap_open(Capture *c) {
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    c->d = diag_new(c->f);
}
static const char *cap_text(Capture *c) {
    fflush(c->f);
    return c->buf ? c->buf : "";
}
static void cap_close(Capture *c) {
    diag_free(c->d);
    fclose(c->f);
    free(c->buf);
}

static SrcLoc L(int line) { return srcloc("g.onnx", line, 1, 1); }

/* A tensor argument from a dims text such as "N,64,H,W". */
static Value *arg(GraphBuilder *g, const char *name, const char *dims, bool param) {
    int64_t d[8] = {0};
    const char *s[8] = {0};
    char buf[128], *save = NULL;
    snprintf(buf, sizeof buf, "%s", dims);
    int r = 0;
    for (char *t = strtok_r(buf, ",", &save); t && r < 8; t = strtok_r(NULL, ",", &save), r++) {
        if (*t >= '0' && *t <= '9') d[r] = atoll(t);
        else s[r] = strdup(t);
    }
    if (!*dims) r = 0;
    Value *v = gb_arg(g, name, TY_F32, r, d, s, param, L(1));
    for (int i = 0; i < r; i++) free((void *)s[i]);
    return v;
}

static const char *tstr(IrModule *m, const Value *v) { return v ? ir_type_str(m, v->type) : "(null)"; }

static char *print_func(const Func *f) {
    StrBuf sb = {0};
    ir_print_func(f, &sb, NULL);
    char *s = strdup(sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* Verifies m, and checks print(parse(print(m))) == print(m). */
static void check_module(IrModule *m) {
    Capture c;
    cap_open(&c);
    CHECK(ir_verify_module(m, c.d) == 0);
    StrBuf a = {0}, b = {0};
    ir_print_module(m, &a, NULL);
    IrModule *again = ir_parse("<rt>", sb_str(&a), c.d);
    CHECK(again != NULL);
    if (again) {
        ir_print_module(again, &b, NULL);
        CHECK(!strcmp(sb_str(&a), sb_str(&b)));
        CHECK(ir_verify_module(again, c.d) == 0);
        ir_module_free(again);
    }
    if (diag_error_count(c.d)) fprintf(stderr, "%s\n%s", cap_text(&c), sb_str(&a));
    sb_free(&a);
    sb_free(&b);
    cap_close(&c);
}

static const char *str_item(const Attr *a, int i) {
    return a && a->kind == ATTR_ARRAY && i < a->n && a->items[i]->kind == ATTR_STRING ? a->items[i]->s : NULL;
}

static const GbConv2d CONV3_S1 = {.stride = {1, 1}, .padding = {1, 1, 1, 1}, .dilation = {1, 1}, .groups = 1};
static const GbConv2d CONV3_S2 = {.stride = {2, 2}, .padding = {1, 1, 1, 1}, .dilation = {1, 1}, .groups = 1};
static const GbConv2d CONV1_S2 = {.stride = {2, 2}, .dilation = {1, 1}, .groups = 1};

/* The ResNet basic block: stride-1 pad-1 3x3 convs give H back (no derived symbol). */
static void test_basic_block(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "basic_block", L(1));
    Value *x = arg(g, "x", "N,C,H,W", false), *w = arg(g, "w", "C,C,3,3", true);
    Value *st[4];
    const char *names[4] = {"gamma", "beta", "mean", "var"};
    for (int i = 0; i < 4; i++) st[i] = arg(g, names[i], "C", true);
    Value *y = gb_conv2d(g, L(2), x, w, NULL, &CONV3_S1);
    CHECK(!strcmp(tstr(m, y), "tensor<f32>[N, C, H, W]"));
    Value *z = gb_batch_norm(g, L(3), y, st[0], st[1], st[2], st[3], 1e-5);
    Value *r = gb_unary(g, L(4), GK_RELU, gb_binary(g, L(4), GK_ADD, z, x), 0, 0);
    CHECK(!strcmp(tstr(m, r), "tensor<f32>[N, C, H, W]"));
    Func *f = gb_finish(g, &r, NULL, 1, L(5));
    CHECK(f && f->kind == FUNC_GRAPH && diag_error_count(c.d) == 0);
    if (f) {
        CHECK(!ir_func_attr(f, "shape_defs") && !ir_func_attr(f, "shape_checks"));
        const Attr *p = ir_func_attr(f, "params");
        CHECK(p && p->kind == ATTR_ARRAY && p->n == 5 && p->items[0]->i == 1 && p->items[4]->i == 5);
        CHECK(!strcmp(str_item(ir_func_attr(f, "result_names"), 0), "out"));
        char *text = print_func(f);
        CHECK(strstr(text, "graph.conv2d %x, %w {dilation = [1, 1], groups = 1, layout = \"NCHW\", padding = [1, 1, 1, 1], "
                           "stride = [1, 1]} : tensor<f32>[N, C, H, W]") != NULL);
        CHECK(strstr(text, "graph.batch_norm %0, %gamma, %beta, %mean, %var {eps = 1e-05}") != NULL);
        free(text);
    }
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Downsampling: stride-2 3x3 pad-1 and stride-2 1x1 pad-0 give the same derived dims, so the residual
 * add needs no check; a second stride-2 conv defines a symbol over the first. */
static void test_derived(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "down", L(1));
    Value *x = arg(g, "x", "N,C,H,W", false);
    Value *w1 = arg(g, "w1", "K,C,3,3", true), *ws = arg(g, "ws", "K,C,1,1", true), *w2 = arg(g, "w2", "K,K,3,3", true);
    Value *a = gb_conv2d(g, L(2), x, w1, NULL, &CONV3_S2);
    Value *s = gb_conv2d(g, L(3), x, ws, NULL, &CONV1_S2);
    CHECK(!strcmp(tstr(m, a), "tensor<f32>[N, K, _d0, _d1]"));
    CHECK(a && s && a->type == s->type);
    Value *sum = gb_binary(g, L(4), GK_ADD, a, s);
    Value *b = gb_conv2d(g, L(5), sum, w2, NULL, &CONV3_S2);
    CHECK(!strcmp(tstr(m, b), "tensor<f32>[N, K, _d2, _d3]"));
    Func *f = gb_finish(g, &b, (const char *[]){"y"}, 1, L(6));
    CHECK(f != NULL);
    const Attr *defs = f ? ir_func_attr(f, "shape_defs") : NULL;
    CHECK(defs && defs->n == 4);
    CHECK(defs && !strcmp(str_item(defs, 0), "_d0 = (H+1)/2"));
    CHECK(defs && !strcmp(str_item(defs, 1), "_d1 = (W+1)/2"));
    CHECK(defs && !strcmp(str_item(defs, 2), "_d2 = (_d0+1)/2"));
    CHECK(f && !ir_func_attr(f, "shape_checks"));
    CHECK(f && !strcmp(str_item(ir_func_attr(f, "result_names"), 0), "y"));
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Undecided equalities become runtime checks, deduplicated; a literal beats a symbol in a broadcast. */
static void test_checks(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "chk", L(1));
    Value *a = arg(g, "a", "N,H", false), *b = arg(g, "b", "N,W", false), *d = arg(g, "d", "N,64", false);
    Value *one = arg(g, "one", "1,W", false), *w = arg(g, "w", "K,64", true);
    Value *s = gb_binary(g, L(2), GK_ADD, a, b);
    CHECK(!strcmp(tstr(m, s), "tensor<f32>[N, H]"));
    Value *s2 = gb_binary(g, L(3), GK_MUL, b, a); /* the same check, flipped */
    Value *t = gb_binary(g, L(4), GK_SUB, a, d);
    CHECK(!strcmp(tstr(m, t), "tensor<f32>[N, 64]"));
    Value *u = gb_binary(g, L(5), GK_MAX, one, a); /* 1 stretches */
    CHECK(!strcmp(tstr(m, u), "tensor<f32>[N, W]"));
    Value *mm = gb_matmul(g, L(6), t, w, NULL, false, true, 1, 0); /* [N,64] x [K,64]^T */
    CHECK(!strcmp(tstr(m, mm), "tensor<f32>[N, K]"));
    Value *res[4] = {s, s2, u, mm};
    Func *f = gb_finish(g, res, NULL, 4, L(7));
    CHECK(f && diag_error_count(c.d) == 0);
    const Attr *ch = f ? ir_func_attr(f, "shape_checks") : NULL;
    CHECK(ch && ch->n == 2);
    CHECK(ch && !strcmp(str_item(ch, 0), "H == W"));
    CHECK(ch && !strcmp(str_item(ch, 1), "H == 64"));
    const Attr *rn = f ? ir_func_attr(f, "result_names") : NULL;
    CHECK(rn && rn->n == 4 && !strcmp(str_item(rn, 0), "out0") && !strcmp(str_item(rn, 3), "out3"));
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Literal shapes: conv arithmetic, pooling with PyTorch's ceil_mode rule, views, reductions, matmul. */
static void test_literal_shapes(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "lit", L(1));
    Value *x = arg(g, "x", "2,3,224,224", false), *w = arg(g, "w", "64,3,7,7", true), *bias = arg(g, "bias", "64", true);
    GbConv2d stem = {.stride = {2, 2}, .padding = {3, 3, 3, 3}, .dilation = {1, 1}, .groups = 1};
    Value *y = gb_conv2d(g, L(2), x, w, bias, &stem);
    CHECK(!strcmp(tstr(m, y), "tensor<f32>[2, 64, 112, 112]"));
    GbPool mp = {.max = true, .kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .dilation = {1, 1}};
    Value *p = gb_pool(g, L(3), y, &mp);
    CHECK(!strcmp(tstr(m, p), "tensor<f32>[2, 64, 56, 56]"));
    /* ceil_mode: H=5, k=2, s=2, pad 1: cdiv(5,2)+1 = 4 windows, but the 4th would start at 6 >= 5 + 1 (in
     * the right padding only), so PyTorch gives 3; W=6, k=3, s=2, pad 1: 4. */
    Value *q = arg(g, "q", "1,1,5,6", false);
    GbPool cp = {.kernel = {2, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .dilation = {1, 1}, .ceil_mode = true};
    CHECK(!strcmp(tstr(m, gb_pool(g, L(4), q, &cp)), "tensor<f32>[1, 1, 3, 4]"));
    cp.ceil_mode = false;
    CHECK(!strcmp(tstr(m, gb_pool(g, L(4), q, &cp)), "tensor<f32>[1, 1, 3, 3]"));
    /* Dilation and asymmetric padding: H (10 + 0 + 2 - 2*(3-1) - 1) / 1 + 1 = 8, W (10 + 1 + 0 - 2 - 1) / 3 + 1 = 3. */
    Value *xd = arg(g, "xd", "1,4,10,10", false), *wd = arg(g, "wd", "8,2,3,3", true);
    GbConv2d dil = {.stride = {1, 3}, .padding = {0, 1, 2, 0}, .dilation = {2, 1}, .groups = 2};
    CHECK(!strcmp(tstr(m, gb_conv2d(g, L(5), xd, wd, NULL, &dil)), "tensor<f32>[1, 8, 8, 3]"));
    /* NHWC: x and the result are [N, H, W, C]. */
    Value *xn = arg(g, "xn", "2,9,9,3", false), *wn = arg(g, "wn", "16,3,3,3", true);
    GbConv2d nhwc = {.stride = {2, 2}, .dilation = {1, 1}, .groups = 1, .nhwc = true};
    CHECK(!strcmp(tstr(m, gb_conv2d(g, L(6), xn, wn, NULL, &nhwc)), "tensor<f32>[2, 4, 4, 16]"));
    Value *gap = gb_reduce(g, L(7), GK_MEAN, p, (const int[]){3, -2, 2}, 3, true);
    CHECK(!strcmp(tstr(m, gap), "tensor<f32>[2, 64, 1, 1]"));
    CHECK(!strcmp(tstr(m, gb_reduce(g, L(7), GK_SUM, p, (const int[]){1}, 1, false)), "tensor<f32>[2, 56, 56]"));
    Value *fl = gb_flatten(g, L(8), gap, 1);
    CHECK(!strcmp(tstr(m, fl), "tensor<f32>[2, 64]"));
    CHECK(!strcmp(tstr(m, gb_flatten(g, L(8), gap, 0)), "tensor<f32>[1, 128]"));
    CHECK(!strcmp(tstr(m, gb_flatten(g, L(8), gap, -1)), "tensor<f32>[128, 1]"));
    CHECK(!strcmp(tstr(m, gb_reshape(g, L(9), gap, 2, (const int64_t[]){128, 1}, NULL)), "tensor<f32>[128, 1]"));
    Value *fcw = arg(g, "fcw", "10,64", true), *fcb = arg(g, "fcb", "10", true);
    Value *lin = gb_matmul(g, L(10), fl, fcw, fcb, false, true, 1, 1);
    CHECK(!strcmp(tstr(m, lin), "tensor<f32>[2, 10]"));
    Value *sm = gb_softmax(g, L(11), lin, -1, false, false);
    CHECK(sm && ir_op_attr_int(sm->def, "axis", -5) == 1);
    Value *ba = arg(g, "ba", "3,1,4,5", false), *bb = arg(g, "bb", "7,5,6", false);
    CHECK(!strcmp(tstr(m, gb_matmul(g, L(12), ba, bb, NULL, false, false, 1, 0)), "tensor<f32>[3, 7, 4, 6]"));
    CHECK(!strcmp(tstr(m, gb_matmul(g, L(12), bb, bb, NULL, true, false, 1, 0)), "tensor<f32>[7, 6, 6]"));
    Func *f = gb_finish(g, &sm, NULL, 1, L(13));
    CHECK(f && diag_error_count(c.d) == 0);
    if (diag_error_count(c.d)) fprintf(stderr, "%s", cap_text(&c));
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Views with symbols: flatten makes one derived symbol for C*H*W; reshape counts are checked. */
static void test_views(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "views", L(1));
    Value *x = arg(g, "x", "N,C,H,W", false), *y = arg(g, "y", "N,K", false);
    Value *f1 = gb_flatten(g, L(2), x, 1), *f2 = gb_flatten(g, L(3), x, 1);
    CHECK(!strcmp(tstr(m, f1), "tensor<f32>[N, _d0]"));
    CHECK(f1 && f2 && f1->type == f2->type);
    Value *r = gb_reshape(g, L(4), x, 2, (const int64_t[]){0, 0}, (const char *[]){"N", "_d0"});
    CHECK(r && r->type == f1->type);
    Value *k = gb_reshape(g, L(5), x, 2, (const int64_t[]){0, 0}, (const char *[]){"N", "K"}); /* count unknown */
    CHECK(!strcmp(tstr(m, k), "tensor<f32>[N, K]"));
    Value *res[2] = {f1, gb_binary(g, L(6), GK_ADD, k, y)};
    Func *f = gb_finish(g, res, (const char *[]){"flat", "sum"}, 2, L(7));
    CHECK(f != NULL);
    const Attr *defs = f ? ir_func_attr(f, "shape_defs") : NULL, *ch = f ? ir_func_attr(f, "shape_checks") : NULL;
    CHECK(defs && defs->n == 1 && !strcmp(str_item(defs, 0), "_d0 = C*H*W"));
    CHECK(ch && ch->n == 1 && !strcmp(str_item(ch, 0), "C*H*N*W == K*N"));
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Each error: one located message naming the op, both types and the dim; NULL returned. */
typedef Value *(*ErrCase)(GraphBuilder *g);

static Value *e_add(GraphBuilder *g) {
    return gb_binary(g, L(2), GK_ADD, arg(g, "a", "N,64,H,W", false), arg(g, "b", "N,128,H,W", false));
}
static Value *e_add_derived(GraphBuilder *g) {
    Value *x = arg(g, "x", "N,C,H,W", false), *w = arg(g, "w", "C,C,3,3", true);
    return gb_binary(g, L(2), GK_ADD, gb_conv2d(g, L(2), x, w, NULL, &CONV3_S1), gb_conv2d(g, L(2), x, w, NULL,
                     &(GbConv2d){.stride = {1, 1}, .dilation = {1, 1}, .groups = 1}));
}
static Value *e_conv_channels(GraphBuilder *g) {
    return gb_conv2d(g, L(2), arg(g, "x", "N,3,H,W", false), arg(g, "w", "64,16,3,3", true), NULL, &CONV3_S1);
}
static Value *e_conv_groups(GraphBuilder *g) {
    GbConv2d a = CONV3_S1;
    a.groups = 4;
    return gb_conv2d(g, L(2), arg(g, "x", "N,8,H,W", false), arg(g, "w", "6,2,3,3", true), NULL, &a);
}
static Value *e_conv_bias(GraphBuilder *g) {
    return gb_conv2d(g, L(2), arg(g, "x", "N,3,H,W", false), arg(g, "w", "64,3,3,3", true), arg(g, "b", "32", true),
                     &CONV3_S1);
}
static Value *e_conv_small(GraphBuilder *g) {
    return gb_conv2d(g, L(2), arg(g, "x", "1,3,2,9", false), arg(g, "w", "8,3,5,5", true), NULL, &CONV1_S2);
}
static Value *e_conv_rank(GraphBuilder *g) {
    return gb_conv2d(g, L(2), arg(g, "x", "N,3,H", false), arg(g, "w", "8,3,5,5", true), NULL, &CONV1_S2);
}
static Value *e_conv_stride(GraphBuilder *g) {
    GbConv2d a = CONV3_S1;
    a.stride[1] = 0;
    return gb_conv2d(g, L(2), arg(g, "x", "N,3,H,W", false), arg(g, "w", "8,3,3,3", true), NULL, &a);
}
static Value *e_bn(GraphBuilder *g) {
    Value *x = arg(g, "x", "N,64,H,W", false), *s = arg(g, "s", "64", true), *v = arg(g, "v", "32", true);
    return gb_batch_norm(g, L(2), x, s, s, s, v, 1e-5);
}
static Value *e_matmul(GraphBuilder *g) {
    return gb_matmul(g, L(2), arg(g, "a", "N,64", false), arg(g, "b", "128,10", true), NULL, false, false, 1, 0);
}
static Value *e_matmul_c(GraphBuilder *g) {
    return gb_matmul(g, L(2), arg(g, "a", "N,64", false), arg(g, "b", "64,10", true), arg(g, "c", "5", true), false,
                     false, 1, 1);
}
static Value *e_matmul_batch(GraphBuilder *g) {
    return gb_matmul(g, L(2), arg(g, "a", "2,4,8", false), arg(g, "b", "3,8,2", true), NULL, false, false, 1, 0);
}
static Value *e_reshape(GraphBuilder *g) {
    return gb_reshape(g, L(2), arg(g, "x", "N,64", false), 2, (const int64_t[]){0, 32}, (const char *[]){"N", NULL});
}
static Value *e_reshape_sym(GraphBuilder *g) {
    return gb_reshape(g, L(2), arg(g, "x", "N,64", false), 2, (const int64_t[]){0, 64}, (const char *[]){"M", NULL});
}
static Value *e_concat(GraphBuilder *g) {
    Value *xs[2] = {arg(g, "a", "N,8", false), arg(g, "b", "N,9", false)};
    return gb_concat(g, L(2), xs, 2, 0);
}
static Value *e_concat_axis(GraphBuilder *g) {
    Value *xs[1] = {arg(g, "a", "N,8", false)};
    return gb_concat(g, L(2), xs, 1, 2);
}
static Value *e_transpose(GraphBuilder *g) {
    return gb_transpose(g, L(2), arg(g, "x", "N,8,4", false), (const int[]){0, 2, 2}, 3);
}
static Value *e_slice(GraphBuilder *g) {
    return gb_slice(g, L(2), arg(g, "x", "N,8", false), (const int64_t[]){0, 6}, (const int64_t[]){1, 1},
                    (const int64_t[]){-1, 3}, 2);
}
static Value *e_unary(GraphBuilder *g) { return gb_unary(g, L(2), GK_ADD, arg(g, "x", "N", false), 0, 0); }
static Value *e_binary_kind(GraphBuilder *g) {
    Value *x = arg(g, "x", "N", false);
    return gb_binary(g, L(2), GK_RELU, x, x);
}
static Value *e_elem(GraphBuilder *g) {
    Value *a = arg(g, "a", "N", false);
    Value *b = gb_arg(g, "b", TY_F16, 1, (const int64_t[]){0}, (const char *[]){"N"}, false, L(1));
    return gb_binary(g, L(2), GK_ADD, a, b);
}
static Value *e_pool_pad(GraphBuilder *g) {
    GbPool p = {.max = true, .kernel = {2, 2}, .stride = {2, 2}, .padding = {0, 2, 0, 0}, .dilation = {1, 1}};
    return gb_pool(g, L(2), arg(g, "x", "N,C,H,W", false), &p);
}
static Value *e_reduce_axis(GraphBuilder *g) {
    return gb_reduce(g, L(2), GK_SUM, arg(g, "x", "N,C", false), (const int[]){2}, 1, false);
}
static Value *e_softmax_axis(GraphBuilder *g) { return gb_softmax(g, L(2), arg(g, "x", "N,C", false), -3, false, false); }
static Value *e_clamp(GraphBuilder *g) { return gb_unary(g, L(2), GK_CLAMP, arg(g, "x", "N", false), 1, 0); }
static Value *e_arg_dup(GraphBuilder *g) {
    arg(g, "x", "N", false);
    return arg(g, "x", "N", false);
}
static Value *e_arg_elem(GraphBuilder *g) {
    return gb_arg(g, "x", TY_I8, 1, (const int64_t[]){4}, NULL, false, L(2));
}
static Value *e_arg_dim(GraphBuilder *g) { return gb_arg(g, "x", TY_F32, 1, (const int64_t[]){-1}, NULL, false, L(2)); }
static Value *e_arg_sym(GraphBuilder *g) {
    return gb_arg(g, "x", TY_F32, 1, NULL, (const char *[]){"2N"}, false, L(2));
}

static void test_errors(void) {
    struct {
        ErrCase fn;
        const char *msg;
    } cases[] = {
        {e_add, "g.onnx:2:1: error: cannot add tensor<f32>[N, 64, H, W] and tensor<f32>[N, 128, H, W]: dim 1 is 64 vs 128"},
        {e_add_derived, "error: cannot add tensor<f32>[N, C, H, W] and tensor<f32>[N, C, _d0, _d1]: dim 2 is H vs "
                        "_d0 (= H-2)"},
        {e_conv_channels, "error: cannot conv2d tensor<f32>[N, 3, H, W] with weight tensor<f32>[64, 16, 3, 3]: dim 1 "
                          "(channels) is 3 vs 16 (weight dim 1 * groups = 16 * 1)"},
        {e_conv_groups, "error: conv2d: weight tensor<f32>[6, 2, 3, 3] has 6 output channels (dim 0), not a multiple "
                        "of groups 4"},
        {e_conv_bias, "error: cannot conv2d with weight tensor<f32>[64, 3, 3, 3] and bias tensor<f32>[32]: dim 0 is 64 "
                      "vs 32"},
        {e_conv_small, "error: conv2d: the output height of tensor<f32>[1, 3, 2, 9] with weight tensor<f32>[8, 3, 5, 5] "
                       "would be -1 (padding 0 + 0, dilation 1)"},
        {e_conv_rank, "error: conv2d: the input must have rank 4, got tensor<f32>[N, 3, H]"},
        {e_conv_stride, "error: conv2d: stride must be at least 1, got 0"},
        {e_bn, "error: cannot batch_norm tensor<f32>[N, 64, H, W] with var tensor<f32>[32]: dim 1 is 64 vs 32"},
        {e_matmul, "error: cannot matmul tensor<f32>[N, 64] and tensor<f32>[128, 10]: the inner dims are 64 vs 128"},
        {e_matmul_c, "error: matmul: the addend tensor<f32>[5] does not broadcast to the result tensor<f32>[N, 10]: dim 1 "
                     "is 5 vs 10"},
        {e_matmul_batch, "error: cannot matmul tensor<f32>[2, 4, 8] and tensor<f32>[3, 8, 2]: batch dim 0 is 2 vs 3"},
        {e_reshape, "error: cannot reshape tensor<f32>[N, 64] to tensor<f32>[N, 32]: the element counts are 64*N vs 32*N"},
        {e_reshape_sym, "error: reshape: dim 0 'M' is not a symbol of the graph"},
        {e_concat, "error: cannot concatenate tensor<f32>[N, 8] and tensor<f32>[N, 9] along axis 0: dim 1 is 8 vs 9"},
        {e_concat_axis, "error: concat: axis 2 is out of range for tensor<f32>[N, 8]"},
        {e_transpose, "error: transpose: perm is not a permutation of the axes of tensor<f32>[N, 8, 4]"},
        {e_slice, "error: slice: 3 elements from 6 by 1 do not lie inside dim 1 of tensor<f32>[N, 8]"},
        {e_unary, "error: internal error: kind 30 is not a unary op"},
        {e_binary_kind, "error: internal error: kind 0 is not a binary op"},
        {e_elem, "error: add: operands tensor<f32>[N] and tensor<f16>[N] have different element types"},
        {e_pool_pad, "error: max_pool2d: padding 2 must be smaller than the window extent 2"},
        {e_reduce_axis, "error: sum: axis 2 is out of range for tensor<f32>[N, C]"},
        {e_softmax_axis, "error: softmax: axis -3 is out of range for tensor<f32>[N, C]"},
        {e_clamp, "error: clamp: the bounds must satisfy lo <= hi, got 1 and 0"},
        {e_arg_dup, "error: graph argument 'x' is declared twice"},
        {e_arg_elem, "error: graph argument 'x': element type i8 is not supported (f32, f16, bf16, i32, i64 or bool)"},
        {e_arg_dim, "error: graph argument 'x': dim 0 cannot be negative, got -1"},
        {e_arg_sym, "error: graph argument 'x': dim 0 '2N' is not an identifier"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        IrModule *m = ir_module_new();
        Capture c;
        cap_open(&c);
        GraphBuilder *g = gb_begin(m, c.d, "bad", L(1));
        Value *r = cases[i].fn(g);
        int errors = diag_error_count(c.d);
        bool found = strstr(cap_text(&c), cases[i].msg) != NULL;
        if (!found || r || errors != 1)
            fprintf(stderr, "case %zu: want '%s', got (%d errors):\n%s", i, cases[i].msg, errors, cap_text(&c));
        CHECK(found && errors == 1);
        CHECK(r == NULL);
        /* Poison: an op on the failed value says nothing more; the graph is dropped. */
        CHECK(gb_unary(g, L(3), GK_RELU, r, 0, 0) == NULL && diag_error_count(c.d) == 1);
        Value *any = ir_func_block(m->first)->num_args ? ir_func_block(m->first)->args[0] : NULL;
        CHECK(gb_finish(g, any ? &any : &r, NULL, 1, L(4)) == NULL);
        CHECK(m->first == NULL);
        cap_close(&c);
        ir_module_free(m);
    }
}

/* gb_expect: declared result types against inferred ones. */
static void test_expect(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "exp", L(1));
    Value *x = arg(g, "x", "N,C,H,W", false), *w = arg(g, "w", "C,C,3,3", true);
    Value *y = gb_conv2d(g, L(2), x, w, NULL, &CONV3_S2);
    const Type *f32 = ir_type_scalar(m, TY_F32);
    /* Unbound P, Q name the inferred dims; a second use of P must agree. */
    const Type *pq = ir_type_tensor(m, f32, 4, NULL, (const char *[]){"N", "C", "P", "Q"});
    CHECK(gb_expect(g, L(3), y, pq, "the result"));
    const Type *pp = ir_type_tensor(m, f32, 4, NULL, (const char *[]){"N", "C", "P", "P"});
    CHECK(gb_expect(g, L(3), y, pp, "the result")); /* (H+1)/2 vs (W+1)/2: a runtime check */
    const Type *hw = ir_type_tensor(m, f32, 4, NULL, (const char *[]){"N", "C", "H", "W"});
    CHECK(gb_expect(g, L(3), y, hw, "the result")); /* H vs (H+1)/2: equal for H = 1 */
    CHECK(diag_error_count(c.d) == 0);
    const Type *bad = ir_type_tensor(m, f32, 4, (const int64_t[]){0, 0, 0, 7}, (const char *[]){"N", "C", "_d0", NULL});
    CHECK(gb_expect(g, L(4), y, bad, "the result")); /* 7 vs _d1: a check */
    Value *lit = gb_conv2d(g, L(5), arg(g, "l", "1,3,8,8", false), arg(g, "lw", "4,3,3,3", true), NULL, &CONV3_S1);
    const Type *l9 = ir_type_tensor(m, f32, 4, (const int64_t[]){1, 4, 8, 9}, NULL);
    CHECK(!gb_expect(g, L(6), lit, l9, "the result of 'g'"));
    CHECK(strstr(cap_text(&c), "g.onnx:6:1: error: the result of 'g' is declared tensor<f32>[1, 4, 8, 9] but is "
                               "tensor<f32>[1, 4, 8, 8]: dim 3 is 9 vs 8") != NULL);
    const Type *f16 = ir_type_tensor(m, ir_type_scalar(m, TY_F16), 4, (const int64_t[]){1, 4, 8, 8}, NULL);
    CHECK(!gb_expect(g, L(7), lit, f16, "the result"));
    gb_abandon(g);
    CHECK(m->first == NULL);
    cap_close(&c);
    /* The checks gb_expect records. */
    cap_open(&c);
    g = gb_begin(m, c.d, "exp2", L(1));
    x = arg(g, "x", "N,C,H,W", false);
    w = arg(g, "w", "C,C,3,3", true);
    y = gb_conv2d(g, L(2), x, w, NULL, &CONV3_S2);
    CHECK(gb_expect(g, L(3), y, pp, "the result"));
    CHECK(gb_expect(g, L(3), y, hw, "the result"));
    Func *f = gb_finish(g, &y, NULL, 1, L(4));
    const Attr *ch = f ? ir_func_attr(f, "shape_checks") : NULL;
    CHECK(ch && ch->n == 3);
    CHECK(ch && !strcmp(str_item(ch, 0), "_d0 == _d1"));
    CHECK(ch && !strcmp(str_item(ch, 1), "H == _d0"));
    CHECK(ch && !strcmp(str_item(ch, 2), "W == _d1"));
    check_module(m);
    cap_close(&c);
    ir_module_free(m);
}

/* Names: derived symbols skip the names arguments use; results need identifier names. */
static void test_names(void) {
    IrModule *m = ir_module_new();
    Capture c;
    cap_open(&c);
    GraphBuilder *g = gb_begin(m, c.d, "names", L(1));
    Value *x = arg(g, "x", "_d0,H", false);
    Value *f = gb_flatten(g, L(2), x, 0);
    CHECK(!strcmp(tstr(m, f), "tensor<f32>[1, _d1]"));
    CHECK(gb_finish(g, &f, (const char *[]){"a.b"}, 1, L(3)) == NULL);
    CHECK(strstr(cap_text(&c), "error: graph result name 'a.b' is not an identifier") != NULL);
    CHECK(m->first == NULL);
    g = gb_begin(m, c.d, "no_result", L(1));
    CHECK(gb_finish(g, NULL, NULL, 0, L(3)) == NULL);
    CHECK(strstr(cap_text(&c), "error: graph 'no_result' has no result") != NULL);
    cap_close(&c);
    ir_module_free(m);
}

int main(void) {
    test_basic_block();
    test_derived();
    test_checks();
    test_literal_shapes();
    test_views();
    test_errors();
    test_expect();
    test_names();
    return check_summary();
}

/* The C view of ir/graph_ops.def (graph_kinds.h): the rows as arrays, and the lookups. */
#include <string.h>
#include "graph_kinds.h"
#include "graph_resize.h"

#define GK_CLASS_OF_UNARY GK_CLASS_UNARY
#define GK_CLASS_OF_BINARY GK_CLASS_BINARY
#define GK_CLASS_OF_REDUCE GK_CLASS_REDUCE
#define GK_CLASS_OF_POOL GK_CLASS_POOL
#define GK_CLASS_OF_COMPARE GK_CLASS_COMPARE
#define GK_CLASS_OF_LOGIC GK_CLASS_LOGIC

/* A kind's code is its position among its class's rows: per class, an enum and a name list generated
 * from that class's rows only (KEEP(WANT, CLASS, X) is X when CLASS is WANT, else nothing). */
#define KEEP(WANT, CLASS, X) KEEP_##WANT##_##CLASS(X)
#define KEEP_UNARY_UNARY(X) X,
#define KEEP_UNARY_BINARY(X)
#define KEEP_UNARY_REDUCE(X)
#define KEEP_UNARY_POOL(X)
#define KEEP_UNARY_COMPARE(X)
#define KEEP_UNARY_LOGIC(X)
#define KEEP_BINARY_UNARY(X)
#define KEEP_BINARY_BINARY(X) X,
#define KEEP_BINARY_REDUCE(X)
#define KEEP_BINARY_POOL(X)
#define KEEP_BINARY_COMPARE(X)
#define KEEP_BINARY_LOGIC(X)
#define KEEP_REDUCE_UNARY(X)
#define KEEP_REDUCE_BINARY(X)
#define KEEP_REDUCE_REDUCE(X) X,
#define KEEP_REDUCE_POOL(X)
#define KEEP_REDUCE_COMPARE(X)
#define KEEP_REDUCE_LOGIC(X)
#define KEEP_POOL_UNARY(X)
#define KEEP_POOL_BINARY(X)
#define KEEP_POOL_REDUCE(X)
#define KEEP_POOL_POOL(X) X,
#define KEEP_POOL_COMPARE(X)
#define KEEP_POOL_LOGIC(X)
#define KEEP_COMPARE_UNARY(X)
#define KEEP_COMPARE_BINARY(X)
#define KEEP_COMPARE_REDUCE(X)
#define KEEP_COMPARE_POOL(X)
#define KEEP_COMPARE_COMPARE(X) X,
#define KEEP_COMPARE_LOGIC(X)
#define KEEP_LOGIC_UNARY(X)
#define KEEP_LOGIC_BINARY(X)
#define KEEP_LOGIC_REDUCE(X)
#define KEEP_LOGIC_POOL(X)
#define KEEP_LOGIC_COMPARE(X)
#define KEEP_LOGIC_LOGIC(X) X,
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(UNARY, CLASS, GKC_##ID)
#include "graph_ops.def"
};
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(BINARY, CLASS, GKC_##ID)
#include "graph_ops.def"
};
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(REDUCE, CLASS, GKC_##ID)
#include "graph_ops.def"
};
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(POOL, CLASS, GKC_##ID)
#include "graph_ops.def"
};
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(COMPARE, CLASS, GKC_##ID)
#include "graph_ops.def"
};
enum {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(LOGIC, CLASS, GKC_##ID)
#include "graph_ops.def"
};

static const GraphKind rows[GK_COUNT] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) {GK_CLASS_OF_##CLASS, NAME, ONNX, SRC, VERB, GKC_##ID},
#include "graph_ops.def"
};

/* The names of each class, in row order, NULL-terminated. */
static const char *const names_unary[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(UNARY, CLASS, NAME)
#include "graph_ops.def"
    NULL};
static const char *const names_binary[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(BINARY, CLASS, NAME)
#include "graph_ops.def"
    NULL};
static const char *const names_reduce[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(REDUCE, CLASS, NAME)
#include "graph_ops.def"
    NULL};
static const char *const names_pool[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(POOL, CLASS, NAME)
#include "graph_ops.def"
    NULL};
static const char *const names_compare[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(COMPARE, CLASS, NAME)
#include "graph_ops.def"
    NULL};
static const char *const names_logic[] = {
#define GRAPH_KIND(CLASS, ID, NAME, ONNX, SRC, VERB) KEEP(LOGIC, CLASS, NAME)
#include "graph_ops.def"
    NULL};

const GraphKind *graph_kind(GraphKindId k) { return &rows[k]; }

#define GK_NONE (-1)
static const struct {
    OpKind op;
    int kind;
} int_rows[] = {
#define GRAPH_INT(OP, KIND) {OP_##OP, GK_##KIND},
#include "graph_ops.def"
};

bool graph_takes_ints(OpKind k, int kind) {
    for (size_t i = 0; i < sizeof int_rows / sizeof int_rows[0]; i++)
        if (int_rows[i].op == k && (int_rows[i].kind == GK_NONE || int_rows[i].kind == kind)) return true;
    return false;
}

static const struct {
    GraphKindId kind, first, mid, last;
} split_rows[] = {
#define GRAPH_REDUCE_SPLIT(KIND, FIRST, MID, LAST) {GK_##KIND, GK_##FIRST, GK_##MID, GK_##LAST},
#include "graph_ops.def"
};

int graph_reduce_stage_kind(GraphKindId k, int i, int n) {
    for (size_t r = 0; r < sizeof split_rows / sizeof split_rows[0]; r++)
        if (split_rows[r].kind == k)
            return (int)(n == 1 ? k : i == n - 1 ? split_rows[r].last : i == 0 ? split_rows[r].first : split_rows[r].mid);
    return -1;
}

int graph_kind_find(GraphKindClass cls, const char *name) {
    for (int k = 0; name && k < GK_COUNT; k++)
        if (rows[k].cls == cls && !strcmp(rows[k].name, name)) return k;
    return -1;
}

int graph_kind_by_onnx(const char *onnx_op) {
    for (int k = 0; onnx_op && k < GK_COUNT; k++)
        if (rows[k].onnx && !strcmp(rows[k].onnx, onnx_op)) return k;
    return -1;
}

int graph_kind_class_of(OpKind k) {
    switch (k) {
    case OP_G_UNARY: return GK_CLASS_UNARY;
    case OP_G_BINARY: return GK_CLASS_BINARY;
    case OP_G_REDUCE: return GK_CLASS_REDUCE;
    case OP_G_POOL: return GK_CLASS_POOL;
    case OP_G_COMPARE: return GK_CLASS_COMPARE;
    case OP_G_LOGIC: return GK_CLASS_LOGIC;
    default: return -1;
    }
}

int graph_kind_of(const Op *op) {
    int cls = graph_kind_class_of(op->kind);
    return cls < 0 ? -1 : graph_kind_find((GraphKindClass)cls, ir_op_attr_str(op, "kind"));
}

const char *const *graph_kind_names(GraphKindClass cls) {
    switch (cls) {
    case GK_CLASS_UNARY: return names_unary;
    case GK_CLASS_BINARY: return names_binary;
    case GK_CLASS_REDUCE: return names_reduce;
    case GK_CLASS_COMPARE: return names_compare;
    case GK_CLASS_LOGIC: return names_logic;
    default: return names_pool;
    }
}

const char *graph_op_label(const Op *op) {
    const char *k = graph_kind_class_of(op->kind) >= 0 ? ir_op_attr_str(op, "kind") : NULL;
    if (k) return k;
    if (op->kind == OP_G_MAP && (k = ir_op_attr_str(op, "fn"))) return k;
    const char *n = ir_op_info[op->kind].name;
    return strncmp(n, "graph.", 6) ? n : n + 6;
}

GraphImap graph_op_imap(OpKind k) {
    switch (k) {
#define GRAPH_OP(KIND, IMAP, DIRECT, STD) case OP_##KIND: return GRAPH_IMAP_##IMAP;
#include "graph_ops.def"
    default: return GRAPH_IMAP_NONE;
    }
}

const char *graph_op_std(OpKind k) {
    switch (k) {
#define GRAPH_OP(KIND, IMAP, DIRECT, STD) case OP_##KIND: return STD;
#include "graph_ops.def"
    default: return NULL;
    }
}

GraphProAt graph_op_prologue(OpKind k, int operand) {
    if (operand < 0 || operand >= 31) return GRAPH_PRO_NONE;
    switch (k) {
#define GRAPH_PROLOGUE(OP, OPERANDS, AT) \
    case OP_##OP: return ((OPERANDS) >> operand & 1) ? GRAPH_PRO_##AT : GRAPH_PRO_NONE;
#include "graph_ops.def"
    default: return GRAPH_PRO_NONE;
    }
}

bool graph_op_stores_direct(OpKind k) {
    switch (k) {
#define GRAPH_OP(KIND, IMAP, DIRECT, STD) case OP_##KIND: return DIRECT;
#include "graph_ops.def"
    default: return false;
    }
}

/* ------------------------------------------------------------ attributes and parameters */

static const char *const layouts[] = {"NCHW", "NHWC", NULL};
static const char *const gelu_approx[] = {"none", "tanh", NULL}; /* PyTorch's approximate= */

const char *const *graph_names(GraphNames n, OpKind op) {
    static const char *const none[] = {NULL};
    switch (n) {
    case GN_KIND: {
        int cls = graph_kind_class_of(op);
        return cls < 0 ? none : graph_kind_names((GraphKindClass)cls);
    }
    case GN_LAYOUTS: return layouts;
    case GN_GELU_APPROX: return gelu_approx;
    case GN_RESIZE_MODES: return graph_resize_modes();
    case GN_RESIZE_COORDS: return graph_resize_coords();
    case GN_RESIZE_ROUNDS: return graph_resize_rounds();
    case GN_PAD_MODES: return graph_pad_modes();
    default: return none;
    }
}

/* The column sentinels of graph_ops.def, for the two row kinds below only. */
#define NOMIN GRAPH_NOMIN
#define NOMAX GRAPH_NOMAX
#define AXIS GRAPH_AXIS
#define POS GRAPH_POS
#define ANY GRAPH_LEN_ANY
#define RANK GRAPH_LEN_RANK
#define SPATIAL GRAPH_LEN_SPATIAL
#define PADS GRAPH_LEN_PADS
#define REQ ((const char *)0)
#define OPT ""
static const GraphAttr attr_rows[] = {
#define GRAPH_ATTR(OP, NAME, KIND, NEED, LEN, MIN, MAX, NAMES) \
    {OP_##OP, #NAME, GA_##KIND, NEED_##NEED, LEN, MIN, MAX, GN_##NAMES},
#define NEED_REQ false
#define NEED_OPT true
#include "graph_ops.def"
#undef NEED_REQ
#undef NEED_OPT
};
static const GraphParam param_rows[] = {
#define GRAPH_PARAM(SRC, NAME, KIND, DEFAULT, MIN, MAX, NAMES) {#SRC, #NAME, GP_##KIND, DEFAULT, MIN, MAX, GN_##NAMES},
#include "graph_ops.def"
};
#undef NOMIN
#undef NOMAX
#undef AXIS
#undef POS
#undef ANY
#undef RANK
#undef SPATIAL
#undef PADS
#undef REQ
#undef OPT
enum { NATTR_ROWS = sizeof attr_rows / sizeof attr_rows[0], NPARAM_ROWS = sizeof param_rows / sizeof param_rows[0] };

const GraphAttr *graph_attr_rows(int *n) {
    *n = NATTR_ROWS;
    return attr_rows;
}

const GraphAttr *graph_attr_find(OpKind op, const char *name) {
    for (int i = 0; name && i < NATTR_ROWS; i++)
        if (attr_rows[i].op == op && !strcmp(attr_rows[i].name, name)) return &attr_rows[i];
    return NULL;
}

int graph_src_params(const char *src, const GraphParam **out, int max) {
    int n = 0;
    for (int i = 0; src && i < NPARAM_ROWS; i++)
        if (!strcmp(param_rows[i].src, src)) {
            if (n < max) out[n] = &param_rows[i];
            n++;
        }
    return n;
}

const GraphParam *graph_src_param(const char *src, const char *name) {
    for (int i = 0; src && name && i < NPARAM_ROWS; i++)
        if (!strcmp(param_rows[i].src, src) && !strcmp(param_rows[i].name, name)) return &param_rows[i];
    return NULL;
}

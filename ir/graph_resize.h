/* The named choices of graph.resize and graph.pad (docs/graphs.md): each list is declared once here and read by the
 * builder, sema, the ONNX importer, the verifier and the lowering. A name's position is its code in
 * lang/std/resize.tile (std_resize's LINEAR, COORD and ROUND consts). */
#ifndef TILEC_GRAPH_RESIZE_H
#define TILEC_GRAPH_RESIZE_H
#include <string.h>

/* How an output coordinate x maps to the input (scale s, input length in, output length out), ONNX's
 * coordinate_transformation_mode; std_resize computes it in f64 as ONNX's reference does. */
#define GRAPH_RESIZE_COORDS(X)                                                                               \
    X(HALF_PIXEL, "half_pixel")                  /* (x + 0.5) / s - 0.5 */                                    \
    X(PYTORCH_HALF_PIXEL, "pytorch_half_pixel")  /* the same, 0 when out == 1 */                              \
    X(ASYMMETRIC, "asymmetric")                  /* x / s */                                                  \
    X(ALIGN_CORNERS, "align_corners")            /* x * (in - 1) / (s * in - 1), 0 when s * in == 1 */        \
    X(TF_HALF_PIXEL_FOR_NN, "tf_half_pixel_for_nn") /* (x + 0.5) / s */

/* Which input element nearest mode takes at a fractional coordinate (ONNX's nearest_mode). */
#define GRAPH_RESIZE_ROUNDS(X)                                                                               \
    X(ROUND_PREFER_FLOOR, "round_prefer_floor")                                                               \
    X(ROUND_PREFER_CEIL, "round_prefer_ceil")                                                                 \
    X(FLOOR, "floor")                                                                                         \
    X(CEIL, "ceil")

/* The interpolation: nearest (one element) or linear (bilinear over the two resized dims). */
#define GRAPH_RESIZE_MODES(X) X(NEAREST, "nearest") X(LINEAR, "linear")

/* graph.pad's modes (ONNX Pad's; std_pad's MODE): the value, x mirrored without repeating the edge, the edge
 * repeated. */
#define GRAPH_PAD_MODES(X) X(CONSTANT, "constant") X(REFLECT, "reflect") X(EDGE, "edge")

#define GRAPH_RESIZE_ENUM_(ID, NAME) GRAPH_RESIZE_##ID,
#define GRAPH_RESIZE_NAME_(ID, NAME) NAME,
typedef enum GraphResizeCoord { GRAPH_RESIZE_COORDS(GRAPH_RESIZE_ENUM_) } GraphResizeCoord;
typedef enum GraphResizeRound { GRAPH_RESIZE_ROUNDS(GRAPH_RESIZE_ENUM_) } GraphResizeRound;
typedef enum GraphResizeMode { GRAPH_RESIZE_MODES(GRAPH_RESIZE_ENUM_) } GraphResizeMode;
#define GRAPH_PAD_ENUM_(ID, NAME) GRAPH_PAD_##ID,
typedef enum GraphPadMode { GRAPH_PAD_MODES(GRAPH_PAD_ENUM_) } GraphPadMode;
#undef GRAPH_PAD_ENUM_

/* NULL-terminated name lists, in code order (static storage). */
static inline const char *const *graph_resize_coords(void) {
    static const char *const names[] = {GRAPH_RESIZE_COORDS(GRAPH_RESIZE_NAME_) NULL};
    return names;
}
static inline const char *const *graph_resize_rounds(void) {
    static const char *const names[] = {GRAPH_RESIZE_ROUNDS(GRAPH_RESIZE_NAME_) NULL};
    return names;
}
static inline const char *const *graph_resize_modes(void) {
    static const char *const names[] = {GRAPH_RESIZE_MODES(GRAPH_RESIZE_NAME_) NULL};
    return names;
}
static inline const char *const *graph_pad_modes(void) {
    static const char *const names[] = {GRAPH_PAD_MODES(GRAPH_RESIZE_NAME_) NULL};
    return names;
}
#undef GRAPH_RESIZE_ENUM_
#undef GRAPH_RESIZE_NAME_

/* The code of name in a NULL-terminated list; -1 when absent (name may be NULL). */
static inline int graph_resize_code(const char *const *names, const char *name) {
    for (int i = 0; name && names[i]; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}
#endif

/* The standard ops (lang/std, embedded as text: driver/std_sources.h) as the graph lowering's
 * instantiator (lower/graph_plan.h: GpInstantiator): the driver owns the frontend, so it parses the std
 * sources and instantiates kernels and fns by name through sema; the lowering sees only the IR. */
#ifndef TILEC_DRIVER_STD_LIB_H
#define TILEC_DRIVER_STD_LIB_H
#include "lower/graph_plan.h"

/* The parsed std sources of one compile. They are parsed on the instantiator's first open, once, each
 * under its own file name (diagnostics point into lang/std/...). */
typedef struct StdLib StdLib;

/* A fresh library (nothing parsed yet); never NULL. Free with std_lib_free. */
StdLib *std_lib_new(void);
void std_lib_free(StdLib *s);
/* The instantiator that reads s (s outlives it). */
GpInstantiator std_lib_instantiator(StdLib *s);
#endif

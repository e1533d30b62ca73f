/* insert-barriers: orders the accesses of shared-memory scratch buffers across the threads of a
 * program (docs/passes/promote.md, "Barriers"). The language gives scratch buffers program-order
 * semantics (a read sees every earlier write of the program); on the GPU each thread runs its own
 * part of a gather or scatter, so another thread's write is visible only after a `barrier`.
 *
 * A forward walk keeps, per buffer, whether a write (W) or a read (R) happened since the last
 * barrier on some path. A read with a pending W (RAW), or a write with a pending R or W (WAR,
 * WAW), gets a barrier just before it, which clears everything. Loops: the state at the top of
 * the body is the entry state joined with the state at the end of the body (the previous
 * iteration), iterated to a fixpoint; when the entry state alone forces barriers inside the body,
 * one barrier goes before the loop instead (the outermost position: it runs once). `if` branches
 * start from the same state and join. Scalars are uniform (architecture.md), so every `if` and
 * `for` is uniform and a barrier anywhere is reached by all threads. Existing barriers count.
 *
 * One remark per buffer that stays in shared memory: "scratch t: shared memory, N bytes, K
 * barriers" (K: the barriers this pass inserted because of t). */
#include "scratch_util.h"

typedef struct State {
    uint64_t r, w;
} State;

typedef struct Barriers {
    IrModule *m;
    PassContext *ctx;
    PassMap index;          /* buffer Value* -> bit number + 1 */
    int count[64];          /* barriers inserted because of buffer bit k */
    bool changed;
} Barriers;

static uint64_t bit_of(Barriers *s, const Value *buf) {
    int k = (int)(intptr_t)pass_map_get(&s->index, buf);
    return k ? (uint64_t)1 << ((k - 1) % 64) : 0;
}

static int lowest(uint64_t x) {
    for (int k = 0; k < 64; k++)
        if (x >> k & 1) return k;
    return 0;
}

/* Inserts (when `insert`) a barrier before op, blamed on the buffers in `why`; returns 1. */
static int put_barrier(Barriers *s, Op *before, uint64_t why, bool insert) {
    if (!insert) return 1;
    Op *b = ir_op_new(s->m, OP_BARRIER, NULL, 0, NULL, 0, 0, before->loc);
    ir_insert_before(before, b);
    s->count[lowest(why)]++;
    s->changed = true;
    return 1;
}

static int walk(Barriers *s, Block *b, State *st, bool insert);

/* The state at the top of a loop body whose entry state is `entry` (fixpoint over the back edge). */
static State loop_in(Barriers *s, Block *body, State entry) {
    State in = entry;
    for (int it = 0; it < 130; it++) {
        State out = in;
        walk(s, body, &out, false);
        State next = {entry.r | out.r, entry.w | out.w};
        if (next.r == in.r && next.w == in.w) break;
        in = next;
    }
    return in;
}

static int walk_for(Barriers *s, Op *op, State *st, bool insert) {
    Block *body = op->regions[0].block;
    int n = 0;
    State in = loop_in(s, body, *st), tmp = in;
    int with = walk(s, body, &tmp, false);
    if (st->r | st->w) {
        State alone = loop_in(s, body, (State){0, 0});
        tmp = alone;
        int without = walk(s, body, &tmp, false);
        if (with > without) { /* the entry state alone costs barriers inside: one before the loop */
            n += put_barrier(s, op, st->r | st->w, insert);
            *st = (State){0, 0};
            in = alone;
        }
    }
    State out = in;
    n += walk(s, body, &out, insert);
    st->r |= out.r;
    st->w |= out.w;
    return n;
}

static int walk(Barriers *s, Block *b, State *st, bool insert) {
    int n = 0;
    for (Op *op = b->first; op; op = op->next) {
        Value *buf = scratch_buffer_of(op);
        uint64_t bit = buf ? bit_of(s, buf) : 0;
        if (bit && op->kind == OP_LOCAL_GATHER) {
            if (st->w & bit) {
                n += put_barrier(s, op, st->w & bit, insert);
                *st = (State){0, 0};
            }
            st->r |= bit;
        } else if (bit && op->kind == OP_LOCAL_SCATTER) {
            if ((st->w | st->r) & bit) {
                n += put_barrier(s, op, (st->w | st->r) & bit, insert);
                *st = (State){0, 0};
            }
            st->w |= bit;
        } else if (op->kind == OP_BARRIER) {
            *st = (State){0, 0};
        } else if (op->kind == OP_FOR) {
            n += walk_for(s, op, st, insert);
        } else if (op->num_regions) {
            State join = *st;
            for (int r = 0; r < op->num_regions; r++) {
                State x = *st;
                n += walk(s, op->regions[r].block, &x, insert);
                join.r |= x.r;
                join.w |= x.w;
            }
            *st = join;
        }
    }
    return n;
}

/* The allocations whose every use is a gather or scatter, numbered in order. */
static int number_buffers(Barriers *s, Func *f, PtrVec *allocs) {
    for (Op *op = ir_func_block(f)->first; op; op = op->next) {
        if (op->kind != OP_LOCAL_ALLOC) continue;
        PtrVec acc = {0};
        scratch_accesses(ir_func_block(f), &op->results[0], &acc);
        bool scratch = acc.len > 0 && acc.len == ir_count_uses(f, &op->results[0]);
        ptrvec_free(&acc);
        if (!scratch) continue;
        ptrvec_push(allocs, op);
        pass_map_put(&s->index, &op->results[0], (void *)(intptr_t)allocs->len);
    }
    return allocs->len;
}

bool pass_insert_barriers(IrModule *m, PassContext *ctx) {
    bool changed = false;
    for (Func *f = m->first; f; f = f->next) {
        if (f->kind != FUNC_KERNEL) continue;
        Barriers s = {.m = m, .ctx = ctx};
        PtrVec allocs = {0};
        if (number_buffers(&s, f, &allocs)) {
            State st = {0, 0};
            walk(&s, ir_func_block(f), &st, true);
            for (int i = 0; ctx->remarks && i < allocs.len; i++) {
                Op *a = allocs.items[i];
                const Type *t = a->results[0].type;
                int64_t bytes = ir_type_bits(t->elem) / 8;
                for (int d = 0; d < t->rank; d++) bytes *= t->dims[d];
                const char *n = ir_op_attr_str(a, "name");
                int k = i < 64 ? s.count[i] : 0;
                diag_remark(ctx->diag, a->loc, "scratch %s: shared memory, %lld bytes, %d barrier%s", n ? n : "?",
                            (long long)bytes, k, k == 1 ? "" : "s");
            }
        }
        ptrvec_free(&allocs);
        pass_map_free(&s.index);
        changed |= s.changed;
    }
    return changed;
}

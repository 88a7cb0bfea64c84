/* A tight C implementation of the random 2-player playout, as a speed yardstick for
 * the numba engine (benchmarks/engine_speed.py compiles and runs it side by side).
 * Same incremental design, same random streams and same games as
 * engine.batch.play_random_games_serial, so it also cross-checks the placement count.
 * Scores are computed (sums, runs, sets, bonuses, Double Time) but only summed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELLS 80
enum { VAL, CAP, RB0, RA0 };
static const int STEP[4] = {1, 8, 9, 7};
static const uint64_t ON_BOARD = 0xfefefefefefefe00ULL;
static const int RUN_PTS[8] = {0, 0, 0, 30, 40, 50, 60, 0};
static const int SET_PTS[8] = {0, 0, 0, 50, 60, 0, 0, 0};
static int is_double[CELLS];

typedef struct {
    int16_t g[CELLS][10];
    uint64_t front, timeout, counts; /* counts: open cells per capacity, 6 bits each */
    int hand[2][11], mask[2], size[2], score[2];
    int deal[40], bag, cur, over;
} State;

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static inline int64_t rng_below(uint64_t *s, uint64_t n) { return (int64_t)(((rng_next(s) >> 32) * n) >> 32); }
static inline uint64_t unit(int c) { return (1ULL << (6 * c)) >> 6; }
static inline int lowest_value(int m) { return m ? __builtin_ctz(m) : 99; }

static inline void update_end(State *st, int e, int other, int line_sum) {
    uint64_t on = (ON_BOARD >> e) & 1, was_in = (st->front >> e) & 1;
    int old = st->g[e][CAP];
    int cap = 24 - line_sum - (st->g[e][other] & 255);
    if (cap < 0) cap = 0;
    if (cap > old) cap = old;
    st->counts += (unit(cap) & -on) - (unit(old) & -(on & was_in));
    st->g[e][CAP] = (int16_t)cap;
    st->front |= on << e;
    st->timeout |= (on & (cap == 0)) << e;
}

static inline int put_tile(State *st, int p, int v, int merged[4]) {
    st->g[p][VAL] = (int16_t)v;
    st->counts -= unit(st->g[p][CAP]) & -((st->front >> p) & 1);
    st->front &= ~(1ULL << p);
    for (int a = 0; a < 4; a++) {
        int b = RB0 + 2 * a, f = RA0 + 2 * a, d = STEP[a];
        int left = st->g[p][b], right = st->g[p][f];
        int m = left + right + v + 256;
        int e1 = p - d * ((left >> 8) + 1), e2 = p + d * ((right >> 8) + 1);
        st->g[e1][f] = (int16_t)m;
        st->g[e2][b] = (int16_t)m;
        update_end(st, e1, b, m & 255);
        update_end(st, e2, f, m & 255);
        merged[a] = m;
    }
    return 0;
}

static inline int stretch(const State *st, int p, int v, int d, int ld, int rd) {
    int k = 1, prev = v, q = p - d;
    while (st->g[q][VAL] && st->g[q][VAL] == prev + ld) { prev = st->g[q][VAL]; q -= d; k++; }
    prev = v; q = p + d;
    while (st->g[q][VAL] && st->g[q][VAL] == prev + rd) { prev = st->g[q][VAL]; q += d; k++; }
    return k;
}

static inline int score(const State *st, int p, int v, const int merged[4]) {
    int total = 0, n24 = 0, n7 = 0;
    for (int a = 0; a < 4; a++) {
        int s = merged[a] & 255, n = merged[a] >> 8, d = STEP[a];
        int is7 = s == 7 && n >= 2, is24 = s == 24;
        total += 20 * is7 + 40 * is24 + 60 * (is24 && n == 7);
        n24 += is24; n7 += is7;
        if (n >= 3) {
            int l = st->g[p - d][VAL], r = st->g[p + d][VAL], k;
            if ((l && l == v - 1) || r == v + 1) { k = stretch(st, p, v, d, -1, 1); total += RUN_PTS[k < 3 ? 0 : k]; }
            if (l == v + 1 || (r && r == v - 1)) { k = stretch(st, p, v, d, 1, -1); total += RUN_PTS[k < 3 ? 0 : k]; }
            if (l == v || r == v) { k = stretch(st, p, v, d, 0, 0); total += SET_PTS[k < 3 ? 0 : k]; }
        }
    }
    total += 60 * n24 * n7;
    return total << (total > 0 ? is_double[p] : 0);
}

static inline void add_tile(State *st, int s, int v) { st->hand[s][v]++; st->mask[s] |= 1 << v; st->size[s]++; }

static inline int max_cap(const State *st) {
    for (int c = 10; c > 0; c--) if ((st->counts >> (6 * (c - 1))) & 63) return c;
    return 0;
}

#ifdef __BMI2__
#include <immintrin.h>
static inline int select_bit(uint64_t x, int j) { return __builtin_ctzll(_pdep_u64(1ULL << j, x)); }
#else
static inline int select_bit(uint64_t x, int j) {
    for (int k = 0; k < j; k++) x &= x - 1;
    return __builtin_ctzll(x);
}
#endif

static inline void end_turn(State *st) {
    st->cur ^= 1;
    int m = max_cap(st);
    st->over = !(lowest_value(st->mask[0]) <= m || lowest_value(st->mask[1]) <= m);
}

static void reset(State *st, uint64_t seed) {
    uint64_t s = seed;
    memset(st, 0, sizeof *st);
    for (int i = 0; i < 40; i++) st->deal[i] = i / 4 + 1;
    for (int i = 39; i > 0; i--) { int j = (int)rng_below(&s, i + 1); int t = st->deal[i]; st->deal[i] = st->deal[j]; st->deal[j] = t; }
    for (int p = 0; p < CELLS; p++) st->g[p][CAP] = 10;
    int pos = 4;
    for (int seat = 0; seat < 2; seat++) for (int k = 0; k < 6; k++) add_tile(st, seat, st->deal[pos++]);
    st->bag = pos;
    int merged[4];
    put_tile(st, 4 * 8 + 4, st->deal[0], merged);
}

static int playout(State *st, uint64_t *rng) {
    int placements = 0;
    while (!st->over) {
        int mask = st->mask[st->cur];
        if (lowest_value(mask) > max_cap(st)) { end_turn(st); continue; }
        uint64_t cells = st->front & ~st->timeout;
        int ncells = __builtin_popcountll(cells), nvals = __builtin_popcount(mask), p = -1, fits = 0;
        for (int t = 0; t < 8; t++) {  /* rejection sampling, as in kernels.random_placement */
            uint64_t z = rng_next(rng);
            int i = (int)(((z >> 32) * (uint64_t)ncells) >> 32), j = (int)(((z & 0xFFFFFFFFULL) * (uint64_t)nvals) >> 32);
            int q = select_bit(cells, i), w = select_bit((uint64_t)mask, j);
            if (st->g[q][CAP] >= w) { p = q; fits = 1 << w; break; }
        }
        if (p < 0) {
            uint64_t counts = st->counts;
            int64_t total = 0;
            for (int c = 1; c <= 10; c++, counts >>= 6)
                total += (int64_t)(counts & 63) * __builtin_popcount(mask & (((1 << (c + 1)) - 1) & ~1));
            int64_t r = rng_below(rng, (uint64_t)total);
            for (;;) {
                p = __builtin_ctzll(cells);
                cells &= cells - 1;
                fits = mask & (((1 << (st->g[p][CAP] + 1)) - 1) & ~1);
                int k = __builtin_popcount(fits);
                if (r < k) break;
                r -= k;
            }
            while (r--) fits &= fits - 1;
        }
        int v = __builtin_ctz(fits), merged[4], seat = st->cur;
        put_tile(st, p, v, merged);
        st->score[seat] += score(st, p, v, merged);
        if (--st->hand[seat][v] == 0) st->mask[seat] &= ~(1 << v);
        st->size[seat]--;
        if (st->bag < 40) add_tile(st, seat, st->deal[st->bag++]);
        end_turn(st);
        placements++;
    }
    return placements;
}

static uint64_t game_seed(uint64_t seed, uint64_t index) {
    uint64_t s = seed ^ (index * 0x2545F4914F6CDD1DULL);
    return rng_next(&s);
}

int main(int argc, char **argv) {
    long games = argc > 1 ? atol(argv[1]) : 200000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], 0, 10) : 0;
    const int dt[8] = {2, 11, 15, 20, 28, 33, 37, 46};
    for (int i = 0; i < 8; i++) is_double[(dt[i] / 7 + 1) * 8 + dt[i] % 7 + 1] = 1;
    State st;
    long placements = 0, checksum = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (long g = 0; g < games; g++) {
        uint64_t s = game_seed(seed, (uint64_t)g);
        reset(&st, s);
        placements += playout(&st, &s);
        checksum += st.score[0] - st.score[1];
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    printf("{\"games\": %ld, \"placements\": %ld, \"seconds\": %.6f, \"checksum\": %ld}\n", games, placements, secs, checksum);
    return 0;
}

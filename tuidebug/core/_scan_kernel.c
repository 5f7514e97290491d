/* The condition engine's scan kernel in C: `_scan_kernel.py`'s `unit`, statement for
 * statement, one function per work dtype. Built once per user by `c_kernel.py` with the
 * system C compiler and called through ctypes, which releases the GIL for the call: a
 * process loads it in a millisecond, where importing numba and loading its cached kernel
 * take ~0.5 s.
 *
 * Only the sums may be reassociated (as numba's `fastmath={"reassoc"}`): every other
 * result is exact and NaN/Inf follow IEEE. Built with -ffp-contract=off: no fused
 * multiply-add, as numba (and MindSpore's tolerance test) computes atol + rtol*|p|.
 */
#include <math.h>
#include <stdint.h>

#define XLANES 64 /* max/min lanes, as in `_scan_kernel.extrema` */

/* Sums may be reassociated (numba's `fastmath={"reassoc"}`), which is what lets a compiler
   split them over SIMD lanes; nothing else is. */
#if defined(__clang__)
#define REASSOC
#define REASSOC_BODY _Pragma("clang fp reassociate(on)")
#elif defined(__GNUC__)
#define REASSOC __attribute__((optimize("associative-math", "no-signed-zeros", "no-trapping-math")))
#define REASSOC_BODY
#else
#define REASSOC
#define REASSOC_BODY
#endif

#define DEFINE_KERNEL(SUFFIX, T)                                                         \
    REASSOC static void sums_x_##SUFFIX(const T *xs, int64_t n, double *s1,       \
                                               double *sa) {                             \
        REASSOC_BODY                                                                     \
        double a = 0.0, b = 0.0;                                                         \
        for (int64_t i = 0; i < n; i++) {                                                \
            double v = (double)xs[i];                                                    \
            a += v;                                                                      \
            b += fabs(v);                                                                \
        }                                                                                \
        *s1 = a;                                                                         \
        *sa = b;                                                                         \
    }                                                                                    \
                                                                                         \
    REASSOC static void sums_xp_##SUFFIX(const T *xs, const T *ps, int64_t n,     \
                                                double *out) {                           \
        REASSOC_BODY                                                                     \
        double a = 0.0, b = 0.0, c = 0.0, d = 0.0;                                       \
        for (int64_t i = 0; i < n; i++) {                                                \
            double v = (double)xs[i], w = (double)ps[i];                                 \
            a += v;                                                                      \
            b += fabs(v);                                                                \
            c += fabs(v - w);                                                            \
            d += fabs(w);                                                                \
        }                                                                                \
        out[0] = a;                                                                      \
        out[1] = b;                                                                      \
        out[2] = c;                                                                      \
        out[3] = d;                                                                      \
    }                                                                                    \
                                                                                         \
    REASSOC static double square_sum_##SUFFIX(const T *xs, int64_t n,             \
                                                     double shift) {                     \
        REASSOC_BODY                                                                     \
        double a = 0.0;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            double v = (double)xs[i] - shift;                                            \
            a += v * v;                                                                  \
        }                                                                                \
        return a;                                                                        \
    }                                                                                    \
                                                                                         \
    /* max and min as float64, NaN ignored; (-inf, inf) when every element is NaN */     \
    static void extrema_##SUFFIX(const T *xs, int64_t n, double *hi_out, double *lo_out) { \
        int64_t first = 0;                                                               \
        while (first < n && xs[first] != xs[first]) first++;                             \
        if (first == n) {                                                                \
            *hi_out = -INFINITY;                                                         \
            *lo_out = INFINITY;                                                          \
            return;                                                                      \
        }                                                                                \
        T hi[XLANES], lo[XLANES];                                                        \
        for (int j = 0; j < XLANES; j++) hi[j] = lo[j] = xs[first];                      \
        int64_t body = first + (n - first) / XLANES * XLANES;                            \
        for (int64_t i = first; i < body; i += XLANES)                                   \
            for (int j = 0; j < XLANES; j++) {                                           \
                T v = xs[i + j];                                                         \
                hi[j] = v > hi[j] ? v : hi[j];                                           \
                lo[j] = v < lo[j] ? v : lo[j];                                           \
            }                                                                            \
        T a = hi[0], b = lo[0];                                                          \
        for (int j = 1; j < XLANES; j++) {                                               \
            a = hi[j] > a ? hi[j] : a;                                                   \
            b = lo[j] < b ? lo[j] : b;                                                   \
        }                                                                                \
        for (int64_t i = body; i < n; i++) {                                             \
            T v = xs[i];                                                                 \
            a = v > a ? v : a;                                                           \
            b = v < b ? v : b;                                                           \
        }                                                                                \
        *hi_out = (double)a;                                                             \
        *lo_out = (double)b;                                                             \
    }                                                                                    \
                                                                                         \
    static int64_t count_ge_##SUFFIX(const T *xs, int64_t n, T t) {                      \
        int64_t c = 0;                                                                   \
        for (int64_t i = 0; i < n; i++) c += xs[i] >= t;                                 \
        return c;                                                                        \
    }                                                                                    \
                                                                                         \
    static void nan_inf_##SUFFIX(const T *xs, int64_t n, int *nan, int *inf) {           \
        int a = 0, b = 0;                                                                \
        for (int64_t i = 0; i < n; i++) {                                                \
            double v = (double)xs[i];                                                    \
            a |= v != v;                                                                 \
            b |= fabs(v) == INFINITY;                                                    \
        }                                                                                \
        *nan = a;                                                                        \
        *inf = b;                                                                        \
    }                                                                                    \
                                                                                         \
    /* |x - p| <= atol + rtol*|p| in MindSpore's order; NaN is never close */            \
    static int64_t close_count_##SUFFIX(const T *xs, const T *ps, int64_t n, double rtol, \
                                        double atol) {                                   \
        int64_t c = 0;                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                \
            double w = (double)ps[i];                                                    \
            c += fabs((double)xs[i] - w) <= atol + rtol * fabs(w);                       \
        }                                                                                \
        return c;                                                                        \
    }                                                                                    \
                                                                                         \
    /* `_scan_kernel.unit`: sums[k*4 + 0..3], moments[k*3 + 0..2], counts[j], extremes[2], \
       found[2] (NaN, Inf), alive[j] as there; `pn` is 0 or n */                        \
    void tuidebug_unit_##SUFFIX(                                                       \
        const T *x, const T *p, int64_t n, int64_t pn, int64_t sub, int32_t is_float,    \
        int32_t stop_on_error, int32_t sd, const T *thresholds, int64_t n_thresholds,    \
        const double *rtols, const double *atols, uint8_t *alive, int64_t n_closes,      \
        double *sums, double *moments, int64_t *counts, double *extremes, uint8_t *found) { \
        int use_prev = pn > 0;                                                           \
        int64_t k = 0;                                                                   \
        for (int64_t s = 0; s < n; s += sub, k++) {                                      \
            int64_t e = s + sub < n ? s + sub : n;                                       \
            int64_t m = e - s;                                                           \
            const T *xs = x + s;                                                         \
            const T *ps = use_prev ? p + s : 0;                                          \
            int nan, inf;                                                                \
            if (stop_on_error && (found[0] || found[1])) {                               \
                if (!(found[0] && found[1])) {                                           \
                    nan_inf_##SUFFIX(xs, m, &nan, &inf);                                 \
                    found[0] |= nan;                                                     \
                    found[1] |= inf;                                                     \
                }                                                                        \
                continue;                                                                \
            }                                                                            \
            double s1, sa;                                                               \
            if (use_prev) {                                                              \
                double four[4];                                                          \
                sums_xp_##SUFFIX(xs, ps, m, four);                                       \
                s1 = four[0];                                                            \
                sa = four[1];                                                            \
                sums[k * 4 + 2] = four[2];                                               \
                sums[k * 4 + 3] = four[3];                                               \
            } else {                                                                     \
                sums_x_##SUFFIX(xs, m, &s1, &sa);                                        \
            }                                                                            \
            sums[k * 4 + 0] = s1;                                                        \
            sums[k * 4 + 1] = sa;                                                        \
            /* a finite sum rules out NaN and Inf; otherwise look (or a float64 overflow) */ \
            int clean = 1;                                                               \
            if (is_float && s1 - s1 != 0.0) {                                            \
                nan_inf_##SUFFIX(xs, m, &nan, &inf);                                     \
                found[0] |= nan;                                                         \
                found[1] |= inf;                                                         \
                clean = !(nan || inf);                                                   \
                if (!clean && stop_on_error) continue;                                   \
            }                                                                            \
            double hi, lo;                                                               \
            extrema_##SUFFIX(xs, m, &hi, &lo);                                           \
            extremes[0] = hi > extremes[0] ? hi : extremes[0];                           \
            extremes[1] = lo < extremes[1] ? lo : extremes[1];                           \
            for (int64_t j = 0; j < n_thresholds; j++) {                                 \
                T t = thresholds[j];                                                     \
                if (clean && lo >= (double)t)                                            \
                    counts[j] += m;                                                      \
                else if (!(clean && hi < (double)t))                                     \
                    counts[j] += count_ge_##SUFFIX(xs, m, t);                            \
            }                                                                            \
            if (sd) {                                                                    \
                double mean = s1 / (double)m;                                            \
                double s2 = square_sum_##SUFFIX(xs, m, 0.0);                             \
                double m2 = s2 - s1 * mean;                                              \
                /* s2 - s1^2/m cancels when |mean| >> sd: then a centred second pass */  \
                if (!(m2 >= 0.0 && s2 <= 16.0 * m2)) m2 = square_sum_##SUFFIX(xs, m, mean); \
                moments[k * 3 + 0] = (double)m;                                          \
                moments[k * 3 + 1] = mean;                                               \
                moments[k * 3 + 2] = m2;                                                 \
            }                                                                            \
            if (use_prev)                                                                \
                for (int64_t j = 0; j < n_closes; j++)                                   \
                    if (alive[j] && close_count_##SUFFIX(xs, ps, m, rtols[j], atols[j]) != m) \
                        alive[j] = 0;                                                    \
        }                                                                                \
    }

DEFINE_KERNEL(float32, float)
DEFINE_KERNEL(float64, double)
DEFINE_KERNEL(int8, int8_t)
DEFINE_KERNEL(int16, int16_t)
DEFINE_KERNEL(int32, int32_t)
DEFINE_KERNEL(uint8, uint8_t)
DEFINE_KERNEL(uint16, uint16_t)
DEFINE_KERNEL(uint32, uint32_t)

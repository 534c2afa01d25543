"""The C++ prelude shared by every generated kernel: vector types (GCC vector extensions) and the
elementwise math helpers, written once as templates that work on ``float`` and on 8/16-lane vectors.

``fast`` selects polynomial vector versions of exp/log/erf/tanh (Cephes-style range reduction, errors
around 1e-7); otherwise vector lanes call libm one at a time (exact, slow). Scalars always use libm.
"""
from __future__ import annotations

import re
from functools import lru_cache

PRELUDE = r"""
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>

#define EK_FAST __EK_FAST__

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v16i __attribute__((vector_size(64)));

template <class V> struct ek_ivec { typedef int32_t t; };
template <> struct ek_ivec<v8f> { typedef v8i t; };
template <> struct ek_ivec<v16f> { typedef v16i t; };
template <class V> constexpr int ek_lanes() { return (int)(sizeof(V) / sizeof(float)); }

// broadcast a float to V (V = float: the value itself)
template <class V> static inline V sp(float c) { V r = V{}; r += c; return r; }

template <class V, class F> static inline V ek_lanewise(V x, F f) {
    if constexpr (ek_lanes<V>() == 1) { return f(x); }
    else { V r; for (int l = 0; l < ek_lanes<V>(); ++l) r[l] = f(x[l]); return r; }
}
template <class V> static inline float ek_hsum(V x) {
    if constexpr (ek_lanes<V>() == 1) { return x; }
    else { float s = 0.0f; for (int l = 0; l < ek_lanes<V>(); ++l) s += x[l]; return s; }
}
template <class V> static inline float ek_hmax(V x) {
    if constexpr (ek_lanes<V>() == 1) { return x; }
    else { float s = x[0]; for (int l = 1; l < ek_lanes<V>(); ++l) s = x[l] > s ? x[l] : s; return s; }
}
template <class V> static inline float ek_hmin(V x) {
    if constexpr (ek_lanes<V>() == 1) { return x; }
    else { float s = x[0]; for (int l = 1; l < ek_lanes<V>(); ++l) s = x[l] < s ? x[l] : s; return s; }
}
template <class V> static inline V ek_max(V a, V b) { return a > b ? a : b; }
template <class V> static inline V ek_min(V a, V b) { return a < b ? a : b; }
template <class V> static inline V ek_abs(V x) { return x < sp<V>(0.0f) ? -x : x; }
template <class V> static inline V ek_fill_eq(V x, V m, float c, float fill) { return m == sp<V>(c) ? sp<V>(fill) : x; }
template <class V> static inline V ek_fill_ne(V x, V m, float c, float fill) { return m != sp<V>(c) ? sp<V>(fill) : x; }

// e^x: x = n ln2 + r, |r| <= ln2/2; degree-6 polynomial for e^r; 2^n assembled in the exponent bits
template <class V> static inline V ek_exp_poly(V x) {
    typedef typename ek_ivec<V>::t VI;
    x = ek_min(ek_max(x, sp<V>(-87.3f)), sp<V>(88.3f));
    const V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    V r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    const V z = r * r;
    V p = sp<V>(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
    return p * (V)bits;
}
// log(x), x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)); polynomial in (m - 1)
template <class V> static inline V ek_log_poly(V x) {
    typedef typename ek_ivec<V>::t VI;
    const VI xi = (VI)x;
    V e = __builtin_convertvector(((xi >> 23) & 0xff) - 126, V);
    V m = (V)((xi & 0x007fffff) | 0x3f000000);
    const auto small = m < sp<V>(0.707106781186547524f);
    e = small ? e - 1.0f : e;
    m = small ? m + m - 1.0f : m - 1.0f;
    const V z = m * m;
    V y = sp<V>(7.0376836292e-2f);
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y = y + e * -2.12194440e-4f;
    y = y - z * 0.5f;
    V res = m + y + e * 0.693359375f;
    res = x > sp<V>(0.0f) ? res : (x == sp<V>(0.0f) ? sp<V>(-INFINITY) : sp<V>(NAN));
    return x == sp<V>(INFINITY) ? x : res;
}
template <class V> static inline V ek_exp(V x) {
    if constexpr (ek_lanes<V>() == 1 || !EK_FAST) return ek_lanewise(x, [](float v) { return expf(v); });
    else return ek_exp_poly(x);
}
template <class V> static inline V ek_log(V x) {
    if constexpr (ek_lanes<V>() == 1 || !EK_FAST) return ek_lanewise(x, [](float v) { return logf(v); });
    else return ek_log_poly(x);
}
// erf: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)
template <class V> static inline V ek_erf(V x) {
    if constexpr (ek_lanes<V>() == 1 || !EK_FAST) return ek_lanewise(x, [](float v) { return erff(v); });
    else {
        const V a = ek_abs(x);
        const V t = sp<V>(1.0f) / (a * 0.3275911f + 1.0f);
        V p = sp<V>(1.061405429f);
        p = p * t - 1.453152027f;
        p = p * t + 1.421413741f;
        p = p * t - 0.284496736f;
        p = p * t + 0.254829592f;
        const V y = sp<V>(1.0f) - p * t * ek_exp_poly(-a * a);
        return x < sp<V>(0.0f) ? -y : y;
    }
}
template <class V> static inline V ek_tanh(V x) {
    if constexpr (ek_lanes<V>() == 1 || !EK_FAST) return ek_lanewise(x, [](float v) { return tanhf(v); });
    else {
        const V t = ek_exp_poly(ek_abs(x) * -2.0f);
        const V y = (sp<V>(1.0f) - t) / (sp<V>(1.0f) + t);
        return x < sp<V>(0.0f) ? -y : y;
    }
}
template <class V> static inline V ek_log1p(V x) {
    if constexpr (ek_lanes<V>() == 1 || !EK_FAST) return ek_lanewise(x, [](float v) { return log1pf(v); });
    else return ek_log_poly(x + 1.0f);
}
template <class V> static inline V ek_sqrt(V x) { return ek_lanewise(x, [](float v) { return sqrtf(v); }); }
template <class V> static inline V ek_rsqrt(V x) { return sp<V>(1.0f) / ek_sqrt(x); }
template <class V> static inline V ek_relu(V x) { return ek_max(x, sp<V>(0.0f)); }
template <class V> static inline V ek_relu6(V x) { return ek_min(ek_max(x, sp<V>(0.0f)), sp<V>(6.0f)); }
template <class V> static inline V ek_neg(V x) { return -x; }
template <class V> static inline V ek_square(V x) { return x * x; }
template <class V> static inline V ek_recip(V x) { return sp<V>(1.0f) / x; }
template <class V> static inline V ek_sigmoid(V x) { return sp<V>(1.0f) / (sp<V>(1.0f) + ek_exp(-x)); }
template <class V> static inline V ek_silu(V x) { return x * ek_sigmoid(x); }
template <class V> static inline V ek_gelu(V x) { return x * 0.5f * (sp<V>(1.0f) + ek_erf(x * 0.70710678118654752f)); }
template <class V> static inline V ek_gelu_tanh(V x) {
    return x * 0.5f * (sp<V>(1.0f) + ek_tanh((x + x * x * x * 0.044715f) * 0.79788456080286536f));
}
template <class V> static inline V ek_leaky_relu(V x, float s) { return x > sp<V>(0.0f) ? x : x * s; }
template <class V> static inline V ek_elu(V x, float alpha) {
    return x > sp<V>(0.0f) ? x : (ek_exp(ek_min(x, sp<V>(0.0f))) - 1.0f) * alpha;
}
template <class V> static inline V ek_selu(V x) {
    return (x > sp<V>(0.0f) ? x : (ek_exp(ek_min(x, sp<V>(0.0f))) - 1.0f) * 1.6732632423543772f) * 1.0507009873554805f;
}
template <class V> static inline V ek_softplus(V x, float beta, float threshold) {
    const V z = x * beta;
    const V y = (ek_max(z, sp<V>(0.0f)) + ek_log1p(ek_exp(-ek_abs(z)))) * (1.0f / beta);
    return z > sp<V>(threshold) ? x : y;
}
template <class V> static inline V ek_clamp(V x, float lo, float hi) { return ek_min(ek_max(x, sp<V>(lo)), sp<V>(hi)); }
template <class V> static inline V ek_clamp_lo(V x, float lo) { return ek_max(x, sp<V>(lo)); }
template <class V> static inline V ek_clamp_hi(V x, float hi) { return ek_min(x, sp<V>(hi)); }
template <class V> static inline V ek_powc(V x, float p) { return ek_lanewise(x, [p](float v) { return powf(v, p); }); }
template <class V> static inline V ek_expm1(V x) { return ek_lanewise(x, [](float v) { return expm1f(v); }); }
template <class V> static inline V ek_sin(V x) { return ek_lanewise(x, [](float v) { return sinf(v); }); }
template <class V> static inline V ek_cos(V x) { return ek_lanewise(x, [](float v) { return cosf(v); }); }
template <class V> static inline V ek_softsign(V x) { return x / (sp<V>(1.0f) + ek_abs(x)); }
template <class V> static inline V ek_hardsigmoid(V x) { return ek_clamp(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f); }
template <class V> static inline V ek_hardswish(V x) { return x * ek_hardsigmoid(x); }
template <class V> static inline V ek_mish(V x) { return x * ek_tanh(ek_softplus(x, 1.0f, 20.0f)); }
template <class V> static inline V ek_logsigmoid(V x) { return -ek_softplus(-x, 1.0f, 20.0f); }
"""


_IDENT = re.compile(r"[A-Za-z_]\w*")
_TEMPLATE_HEAD = re.compile(r"^\s*template\s*<[^>]*>\s*")


@lru_cache(maxsize=2)  # one text per fast_math value; every generated kernel asks again
def _chunks(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(the head: includes and defines, [(defined name, text)]) of the prelude's top-level declarations;
    a comment line belongs to the declaration after it."""
    head, chunks, cur, depth, pending = [], [], [], 0, []
    for line in text.splitlines():
        if not chunks and not cur and (line.startswith("#") or not line.strip()):
            head.append(line)
            continue
        if not cur and line.lstrip().startswith("//"):
            pending.append(line)
            continue
        if not cur and not line.strip():
            continue
        cur.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0 and line.rstrip().endswith(("}", ";")):
            body = "\n".join(cur)
            chunks.append((_defined_name(body), "\n".join(pending + cur)))
            cur, pending = [], []
    if cur:  # pragma: no cover - the prelude is well formed
        raise ValueError("unbalanced prelude")
    return "\n".join(head), tuple(chunks)


def _defined_name(decl: str) -> str:
    if decl.startswith("typedef"):
        m = re.search(r"(\w+)\s*(?:__attribute__|;)", decl)
    elif (m := re.search(r"\bstruct\s+(\w+)", decl)) is None:
        m = re.search(r"\b(\w+)\s*\(", _TEMPLATE_HEAD.sub("", decl))
    if m is None:  # pragma: no cover - the prelude is well formed
        raise ValueError(f"cannot tell what this declares: {decl[:80]}")
    return m.group(1)


def prelude(fast_math: bool, uses: str | None = None) -> str:
    """The prelude; with ``uses`` (the code that follows it), only the declarations that code needs,
    directly or through other helpers. A generated kernel is then a complete file holding what it uses:
    a trace of it in a prompt is short enough to be shown whole (the full prelude is ~9 kB, and a real
    1.5B run saw traces cut after 4 kB of helpers, before the kernel they were meant to show)."""
    text = PRELUDE.replace("__EK_FAST__", "1" if fast_math else "0")
    if uses is None:
        return text
    head, chunks = _chunks(text)
    needed = set(_IDENT.findall(uses))
    keep = [False] * len(chunks)
    changed = True
    while changed:
        changed = False
        for i, (name, body) in enumerate(chunks):
            if not keep[i] and name in needed:
                keep[i] = changed = True
                needed |= set(_IDENT.findall(body))
    return head + "\n" + "\n".join(body for (_, body), k in zip(chunks, keep) if k) + "\n"

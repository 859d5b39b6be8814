"""An independent RDP accountant for the tests: closed forms at integer orders, written from
the papers and sharing no code with ``tff_idp.privacy`` or dp-accounting's RDP routines.

- Poisson-sampled Gaussian, add/remove-one (Mironov, Talwar, Zhang 2019, "Renyi Differential
  Privacy of the Sampled Gaussian Mechanism"): RDP = log(A_alpha) / (alpha - 1) with
  A_alpha = E_{x ~ N(0, z^2)} [(1 - q + q exp((2x - 1) / (2 z^2)))^alpha] (their Sec. 3.1).
  Integer alpha: the binomial expansion of Sec. 3.3,
  A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k exp((k^2 - k) / (2 z^2));
  fractional alpha (< 11 here): the expectation by numerical integration (scipy's quad).
- Fixed-size sampling without replacement, replace-one (Wang, Balle, Kasiviswanathan 2019,
  "Subsampled Renyi DP and analytical moments accountant", Thm. 27 of the arXiv version, the
  Gaussian case), base mechanism a Gaussian with RDP eps(j) = j / (2 z^2) (z = noise std over
  the replace-one sensitivity): with gamma = m / n, at integer alpha
  A = 1 + gamma^2 C(alpha, 2) min(4 (e^eps(2) - 1), 2 e^eps(2))
        + sum_{j>=3} gamma^j C(alpha, j) min(4 sqrt(D_{2 floor(j/2)} D_{2 ceil(j/2)}),
                                             2 e^((j-1) eps(j))),
  D_k the k-th forward difference at 0 of the Gaussian's moments M(x) = exp(x (x-1) / (2 z^2))
  (= E[(p/q)^x]), summed exactly in 500-digit arithmetic (mpmath); between integers, (alpha - 1) RDP(alpha) is convex in alpha, so its linear
  interpolation is an upper bound (their Sec. 3.4).
- Conversion to (epsilon, delta): Canonne, Kamath, Steinke 2020, Prop. 12:
  epsilon = min_alpha RDP + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1);
  ``basic_epsilon``: Mironov 2017, Prop. 3 (paper 003 Lemma 4):
  epsilon = min_alpha RDP + log(1/delta) / (alpha - 1).
"""
import functools
import math

from scipy import integrate

# a subset of dp-accounting's default orders (so a correct ledger is never above us)
ORDERS = tuple([1 + x / 10 for x in range(1, 100)] + list(range(11, 64)) + [128, 256])


def _logsumexp(xs):
    m = max(xs)
    return m + math.log(sum(math.exp(x - m) for x in xs))


def _log_comb(a, k):
    return math.lgamma(a + 1) - math.lgamma(k + 1) - math.lgamma(a - k + 1)


@functools.lru_cache(maxsize=None)
def poisson_gaussian_rdp(q, z, alpha):
    if q >= 1.0:
        return alpha / (2 * z * z)
    if float(alpha).is_integer():
        alpha = int(alpha)
        terms = [_log_comb(alpha, k) + (alpha - k) * math.log1p(-q) + k * math.log(q)
                 + (k * k - k) / (2 * z * z) for k in range(alpha + 1)]
        return _logsumexp(terms) / (alpha - 1)
    assert alpha < 11, "fractional orders are integrated only below 11"

    def log_integrand(x):
        mix = _logsumexp([math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * z * z)])
        return -x * x / (2 * z * z) - 0.5 * math.log(2 * math.pi * z * z) + alpha * mix

    lo, hi = -14 * z, alpha + 14 * z      # the mass lies between the two Gaussians' tails
    peak = max(log_integrand(lo + (hi - lo) * i / 400) for i in range(401))
    value, _ = integrate.quad(lambda x: math.exp(log_integrand(x) - peak), lo, hi,
                              epsabs=0, epsrel=1e-12, limit=400, points=[0.0, 1.0, alpha])
    return (peak + math.log(value)) / (alpha - 1)


def wor_gaussian_rdp(population, cohort, z, alpha):
    gamma = cohort / population
    if gamma >= 1.0:
        return alpha / (2 * z * z)
    if not float(alpha).is_integer():
        lo, hi = math.floor(alpha), math.ceil(alpha)
        k_lo = 0.0 if lo == 1 else (lo - 1) * wor_gaussian_rdp(population, cohort, z, lo)
        k_hi = (hi - 1) * wor_gaussian_rdp(population, cohort, z, hi)
        return (k_lo + (alpha - lo) * (k_hi - k_lo)) / (alpha - 1)
    alpha = int(alpha)
    eps = lambda j: j / (2 * z * z)
    log_diff = _log_forward_differences(z, alpha + 1)
    second = min(math.log(4) + math.log(math.expm1(eps(2))), math.log(2) + eps(2))
    terms = [0.0, 2 * math.log(gamma) + _log_comb(alpha, 2) + second]
    for j in range(3, alpha + 1):
        ternary = math.log(4) + 0.5 * (log_diff[2 * (j // 2)] + log_diff[2 * (-(-j // 2))])
        terms.append(j * math.log(gamma) + _log_comb(alpha, j)
                     + min(ternary, math.log(2) + (j - 1) * eps(j)))
    return _logsumexp(terms) / (alpha - 1)


def _log_forward_differences(z, count):
    """log D_k for k <= count, D_k = sum_i (-1)^(k-i) C(k, i) exp(i (i-1) / (2 z^2)). D_k uses
    the first k + 1 moments alone, so one table per z, to the largest order, serves them all."""
    assert count <= _TABLE
    return _difference_table(z)[:count + 1]


_TABLE = int(max(ORDERS)) + 1


@functools.lru_cache(maxsize=None)
def _difference_table(z):
    import mpmath
    count = _TABLE
    with mpmath.workdps(500):
        f = [mpmath.exp(mpmath.mpf(i) * (i - 1) / (2 * mpmath.mpf(z) ** 2))
             for i in range(count + 1)]
        out, row = [], f
        for _ in range(count + 1):          # the difference table: D_k = (row k)[0]
            d = row[0]
            out.append(float(mpmath.log(d)) if d > 0 else -math.inf)
            row = [b - a for a, b in zip(row, row[1:])]
    return out


def observed_gaussian_rdp(q, z, alpha):
    """With probability q a Gaussian release of one client, nothing otherwise, the server
    seeing which: the Renyi divergence of the pair (selector, output)."""
    g = (alpha - 1) * alpha / (2 * z * z)
    if q >= 1.0:
        return g / (alpha - 1)
    return _logsumexp([math.log1p(-q), math.log(q) + g]) / (alpha - 1)


def epsilon(rdp_of_order, rounds, delta):
    best = math.inf
    for a in ORDERS:
        r = rounds * rdp_of_order(a)
        best = min(best, r + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1))
    return max(best, 0.0)


def basic_epsilon(rdp_of_order, rounds, delta):
    return min(rounds * rdp_of_order(a) + math.log(1 / delta) / (a - 1) for a in ORDERS)

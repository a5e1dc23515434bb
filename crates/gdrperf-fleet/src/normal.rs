//! The standard normal's tails, for "how sure": hand-written (Acklam's inverse, 1.15e-9 relative
//! error; Numerical Recipes' erfc, 1.2e-7)
//! because two functions do not justify a statistics crate in the build.

/// P(Z < z) for a standard normal Z.
pub fn lower_tail(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Numerical Recipes' erfc (Chebyshev fit, fractional error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let value = t * poly.exp();
    if x >= 0.0 {
        value
    } else {
        2.0 - value
    }
}

/// The z with P(Z < z) = p, 0 < p < 1 (Acklam's rational approximation).
pub fn quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// An upper bound on P(X >= k) for X ~ Binomial(n, p): the Chernoff bound
/// exp(-n KL(k/n || p)), exact when k = n (p^n) and 1 when k <= n p. Conservative (never below the
/// true tail), so a decision that passes with it passes with the exact tail; a single expression
/// where the exact sum over thousands of rows would cost a loop a port.
pub fn binomial_upper_tail(k: u64, n: u64, p: f64) -> f64 {
    if n == 0 || k == 0 {
        return 1.0;
    }
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let share = k as f64 / n as f64;
    if share <= p {
        return 1.0;
    }
    let divergence = if k == n {
        -p.ln()
    } else {
        share * (share / p).ln() + (1.0 - share) * ((1.0 - share) / (1.0 - p)).ln()
    };
    (-(n as f64) * divergence).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binomial_bound_is_exact_at_all_and_above_the_tail_elsewhere() {
        // k = n: p^n exactly. 3 of 4 at 0.02: exact 4 x 0.02^3 x 0.98 + 0.02^4 = 3.152e-5; the
        // bound exp(-4 KL(0.75 || 0.02)) = 7.4e-5 lies above it. At or below the mean: 1.
        assert!((binomial_upper_tail(4, 4, 0.02) - 0.02f64.powi(4)).abs() < 1e-15);
        let bound = binomial_upper_tail(3, 4, 0.02);
        assert!(bound > 3.152e-5 && bound < 8e-5, "{bound}");
        assert_eq!(binomial_upper_tail(2, 100, 0.02), 1.0);
        assert_eq!(binomial_upper_tail(0, 4, 0.5), 1.0);
    }

    #[test]
    fn tables_values_come_back() {
        // Standard table values: P(Z < -1.96) = 0.0250, P(Z < -5) = 2.87e-7.
        assert!((lower_tail(-1.96) - 0.024_998).abs() < 1e-5);
        assert!((lower_tail(-5.0) / 2.866_5e-7 - 1.0).abs() < 1e-3);
        assert!((quantile(0.025) + 1.959_964).abs() < 1e-5);
        assert!((quantile(1e-9) + 5.997_807).abs() < 1e-4);
    }
}

//! Money as a person reads it: cents, never `-0.00`. A rounding of a tiny negative amount (a
//! headroom of `-0.000001`) would print as `-0.00`; these helpers make that `0.00`.

/// `x` rounded to cents, with a negative zero made positive.
pub(crate) fn cents(x: f64) -> f64 {
    // -0.0 + 0.0 is +0.0 in IEEE arithmetic.
    (x * 100.0).round() / 100.0 + 0.0
}

/// `x` as dollars with two decimals, `$1.50`, `-$0.25`, never `$-0.00`.
pub(crate) fn usd(x: f64) -> String {
    let c = cents(x);
    if c < 0.0 {
        format!("-${:.2}", -c)
    } else {
        format!("${c:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_negative_zero() {
        assert_eq!(usd(-0.001), "$0.00");
        assert_eq!(usd(-0.0), "$0.00");
        assert_eq!(format!("{}", cents(-0.004)), "0");
        assert!(cents(-0.004).is_sign_positive());
        assert_eq!(usd(-0.25), "-$0.25");
        assert_eq!(usd(4.976), "$4.98");
        assert_eq!(usd(12.0), "$12.00");
    }
}

"""Student's t of servegate._stats against published tables and its own CDF."""

from __future__ import annotations

import pytest

from servegate._stats import t_cdf, t_quantile


def test_student_t_quantiles() -> None:
    """t quantiles for 1, 2, 4 and 30 degrees of freedom, and the normal one for infinity."""
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(0.975, 4) == pytest.approx(2.7764, abs=1e-4)
    assert t_quantile(0.975, 30) == pytest.approx(2.0423, abs=1e-4)
    assert t_quantile(0.975, float("inf")) == pytest.approx(1.95996, abs=1e-5)


@pytest.mark.parametrize("df", [1, 2.5, 3, 7, 19.3, 120])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_the_quantile_inverts_the_cdf(df: float, p: float) -> None:
    """t_cdf at t_quantile(p) gives p back, for real degrees of freedom too."""
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_the_cdf_is_symmetric_about_zero() -> None:
    """P(T <= -t) = 1 - P(T <= t), and the median is 0."""
    assert t_cdf(0.0, 5) == pytest.approx(0.5, abs=1e-12)
    assert t_cdf(-2.0, 5) == pytest.approx(1.0 - t_cdf(2.0, 5), abs=1e-12)
    assert t_cdf(2.5706, 5) == pytest.approx(0.975, abs=1e-5)

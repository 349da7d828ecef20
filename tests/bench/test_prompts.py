"""The salts that isolate load points' prompts from each other (servegate.bench.prompts)."""

from __future__ import annotations

from servegate.bench.prompts import salt_prefix, salted_seed


def test_a_salt_is_the_same_for_the_same_coordinates_and_differs_across_points() -> None:
    """A rerun draws the same salt; another point or start draws another."""
    assert salted_seed(7, 0, 1) == salted_seed(7, 0, 1)
    assert len({salted_seed(7, 0, 1), salted_seed(7, 0, 2), salted_seed(7, 1, 1)}) == 3
    assert salt_prefix(7, 0, 1) == salt_prefix(7, 0, 1) != salt_prefix(7, 0, 2)


def test_no_coordinates_means_no_salt() -> None:
    """Unsalted (``--cache share``), the seed and the text stay what they were."""
    assert salted_seed(7) == 7
    assert salt_prefix(7) == ""

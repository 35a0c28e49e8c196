"""The bounded and long runs differ only in scale."""

from helpers.reliability import scaled


def test_scaled_picks_the_bounded_figure_by_default(monkeypatch):
    import helpers.reliability as knobs

    monkeypatch.setattr(knobs, "LONG", False)
    assert knobs.scaled(3, 300) == 3
    monkeypatch.setattr(knobs, "LONG", True)
    assert knobs.scaled(3, 300) == 300
    assert scaled(1, 1) == 1

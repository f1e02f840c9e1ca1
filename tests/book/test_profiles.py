import pytest
import torch

from feature_learning.book.profiles import ParameterError, Run, by_profile, check_int, resolve_device, start_run


def test_unknown_profile_names_parameter_and_allowed_values():
    with pytest.raises(ParameterError, match=r"'profile'.*ci, book, full"):
        start_run("huge", 0)


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_bad_seed_is_refused(seed):
    with pytest.raises(ParameterError, match="seed"):
        start_run("ci", seed)


def test_bad_device_is_refused():
    with pytest.raises(ParameterError, match="device"):
        resolve_device("tpu")


def test_auto_device_is_cpu_without_cuda():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


def test_by_profile_requires_every_profile():
    assert by_profile("book", {"ci": 1, "book": 2, "full": 3}) == 2
    with pytest.raises(ParameterError, match="full"):
        by_profile("ci", {"ci": 1, "book": 2})


def test_check_int_bounds():
    assert check_int("k", 3, minimum=2, maximum=5) == 3
    with pytest.raises(ParameterError, match=r"'k' is 6"):
        check_int("k", 6, minimum=2, maximum=5)


def test_streams_are_named_by_strings_only():
    with pytest.raises(TypeError, match="stream name: 0"):
        start_run("ci", 7, "cpu").generator(0)


def test_named_streams_are_reproducible_distinct_and_independent_of_other_streams():
    run = start_run("ci", 7, "cpu")
    a = torch.randn(3, generator=run.generator("mixture", 0))
    assert torch.equal(a, torch.randn(3, generator=run.generator("mixture", 0)))
    assert not torch.equal(a, torch.randn(3, generator=run.generator("mixture", 1)))
    assert not torch.equal(a, torch.randn(3, generator=run.generator("parity", 0)))
    assert not torch.equal(a, torch.randn(3, generator=start_run("ci", 8, "cpu").generator("mixture", 0)))
    # the stream seed is a function of (seed, name, keys) only
    assert run.stream_seed("mixture", 0) == start_run("book", 7, "cpu").stream_seed("mixture", 0)
    assert 0 <= run.stream_seed("x") < 2**63
    rng = run.numpy_rng("probe", 2)
    assert rng.integers(1 << 30) == run.numpy_rng("probe", 2).integers(1 << 30)


def test_device_generator_is_the_named_stream_on_the_cpu_and_the_pretend_accelerator():
    """On the CPU (and on ``meta``, the pretend accelerator, which has no generators) ``device_generator`` is
    ``generator``: the same numbers, so CPU runs do not change when a chapter draws with it."""
    for device in ("cpu", "meta"):
        run = Run("ci", 7, torch.device(device))
        g = run.device_generator("pretrain", 3)
        assert g.device == torch.device("cpu")
        a = torch.randn(5, generator=g, device=g.device, dtype=torch.float64)
        assert torch.equal(a, torch.randn(5, generator=run.generator("pretrain", 3), dtype=torch.float64))
        assert torch.equal(torch.multinomial(torch.ones(2, 4), 6, True, generator=run.device_generator("t")),
                           torch.multinomial(torch.ones(2, 4), 6, True, generator=run.generator("t")))
    if torch.cuda.is_available():
        g = Run("ci", 7, torch.device("cuda")).device_generator("pretrain", 3)
        assert g.device.type == "cuda" and torch.randn(2, generator=g, device=g.device).device.type == "cuda"


def test_override_reaches_into_nested_sizes_and_differences_lists_dotted_paths():
    import dataclasses

    from feature_learning.book.profiles import differences, override

    @dataclasses.dataclass(frozen=True)
    class Inner:
        seeds: int = 5
        width: int = 64

    @dataclasses.dataclass(frozen=True)
    class Sizes:
        steps: int = 1000
        inner: Inner = Inner()

    book = Sizes()
    ci = override(book, steps=100, inner={"seeds": 2})
    full = override(book, inner={"width": 512})
    assert ci == Sizes(100, Inner(2, 64)) and full.inner == Inner(5, 512) and book == Sizes()
    rows = dict(differences({"ci": ci, "book": book, "full": full}))
    assert rows == {
        "steps": {"ci": 100, "book": 1000, "full": 1000},
        "inner.seeds": {"ci": 2, "book": 5, "full": 5},
        "inner.width": {"ci": 64, "book": 64, "full": 512},
    }
    with pytest.raises(TypeError):
        override(book, no_such_field=1)

"""Records' direct ``__init__``: the same arguments, defaults and result as the dataclass one."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from tcopy_cli.trace import records, scriptnames

FROZEN = [
    cls
    for cls in vars(records).values()
    if isinstance(cls, type)
    and dataclasses.is_dataclass(cls)
    and cls.__module__ == records.__name__
    and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
]


def test_every_frozen_record_has_the_direct_init() -> None:
    assert len(FROZEN) > 10
    for cls in FROZEN:
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert cls.__init__.__code__.co_filename == "<string>"


@pytest.mark.parametrize("cls", FROZEN, ids=lambda c: c.__name__)
def test_arguments_and_defaults_are_the_fields(cls: type) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        if f.default is not dataclasses.MISSING:
            assert p.default is f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty


@pytest.mark.parametrize("cls", FROZEN, ids=lambda c: c.__name__)
def test_each_argument_lands_in_its_field(cls: type) -> None:
    fields = dataclasses.fields(cls)
    given = {f.name: object() for f in fields}
    by_keyword = cls(**given)
    by_position = cls(*given.values())
    for name, value in given.items():
        assert getattr(by_keyword, name) is value
        assert getattr(by_position, name) is value
    assert by_keyword == by_position
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(by_keyword, fields[0].name, 1)


@pytest.mark.parametrize("cls", FROZEN, ids=lambda c: c.__name__)
def test_defaults_and_fresh_factories(cls: type) -> None:
    fields = dataclasses.fields(cls)
    required = {
        f.name: object()
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    a, b = cls(**required), cls(**required)
    for f in fields:
        if f.default is not dataclasses.MISSING:
            assert getattr(a, f.name) is f.default
        elif f.default_factory is not dataclasses.MISSING:
            made = f.default_factory()
            assert getattr(a, f.name) == made
            if isinstance(made, (list, dict, set)):  # a new one for each record, never shared
                assert getattr(a, f.name) is not getattr(b, f.name)
    with pytest.raises(TypeError):
        cls(**required, no_such_field=1)
    if required:
        with pytest.raises(TypeError):
            cls()


def test_a_name_as_the_script_writes_it() -> None:
    assert [scriptnames.script_name(n) for n in ["f:h", "f:xs[0]", "h", 'd["a:b"]', 'f:d["a:b"]']] == [
        "h",
        "xs[0]",
        "h",
        'd["a:b"]',
        'd["a:b"]',
    ]
    assert [scriptnames.is_local(n) for n in ["f:h", 'd["a:b"]']] == [True, False]

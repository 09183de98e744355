"""What the installed wheel ships: the native module inside the package,
the type stubs and the PEP 561 marker."""

from __future__ import annotations

import inspect
from importlib import resources

import heimdall
from heimdall import _native


def test_the_package_is_typed() -> None:
    files = resources.files("heimdall")
    assert files.joinpath("py.typed").is_file()
    assert files.joinpath("_native.pyi").is_file()
    assert _native.__name__ == "heimdall._native"
    assert heimdall.__version__


def test_the_sync_and_async_clients_have_the_same_methods() -> None:
    def public(cls: type) -> set[str]:
        return {n for n, _ in inspect.getmembers(cls, callable) if not n.startswith("_")}

    assert public(heimdall.Client) - {"from_profile"} == public(heimdall.AsyncClient) - {"from_profile"}
    for name in public(heimdall.AsyncClient) - {"from_profile"}:
        assert inspect.iscoroutinefunction(getattr(heimdall.AsyncClient, name)), name
        assert not inspect.iscoroutinefunction(getattr(heimdall.Client, name)), name
    for name in ("get_value", "get_values", "write_as_program", "health"):
        assert inspect.iscoroutinefunction(getattr(heimdall.AsyncAgentClient, name)), name
    # The native classes answer every method the wrappers call.
    for cls, native in ((heimdall.Client, _native.Client), (heimdall.AsyncClient, _native.AsyncClient)):
        wrapped = public(cls) - {"from_profile", "create_domain", "create_system", "create_component"}
        wrapped -= {"create_environment", "access_log_page"}
        assert wrapped <= public(native), wrapped - public(native)

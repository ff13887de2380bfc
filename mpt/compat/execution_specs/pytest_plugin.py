"""pytest plugin: ``pytest -p mpt.compat.execution_specs.pytest_plugin`` installs mpt.compat.execution_specs before
any test is collected, for test suites and fillers that run execution-specs in the pytest process itself."""


def pytest_configure(config):
    from mpt.compat import execution_specs

    execution_specs.install()

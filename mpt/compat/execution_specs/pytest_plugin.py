"""pytest plugin: ``pytest -p mpt.compat.execution_specs.pytest_plugin`` installs mpt.compat.execution_specs before
any test is collected, for test suites and fillers that run execution-specs in the pytest process itself."""


from mpt.compat import execution_specs


def pytest_configure(config):
    execution_specs.install()

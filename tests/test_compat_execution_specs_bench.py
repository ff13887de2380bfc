"""The SpecStateRoot bench cases without execution-specs: reported as skipped, naming the extra (no spec needed)."""

from mpt.bench import cases
from mpt.bench.__main__ import main
from mpt.bench.cases import execution_specs as spec_cases
from mpt.errors import MissingExtraError


def test_spec_cases_are_skipped_with_a_message_without_the_extra(monkeypatch, capsys):
    def missing():
        raise MissingExtraError('mpt.compat.execution_specs needs execution-specs: pip install "mpt-engine[spec]"')

    monkeypatch.setattr(spec_cases, "_fork", missing)
    assert {c.name for c in cases.select("SpecStateRoot/")} >= {"SpecStateRoot/10K", "SpecStateRoot/10K-spec"}
    code = main(["-b", "SpecStateRoot/10K$", "--count", "1", "--no-progress"])
    out = capsys.readouterr()
    assert code == 0, out
    assert 'skipped SpecStateRoot/10K: mpt.compat.execution_specs needs execution-specs: pip install ' \
           '"mpt-engine[spec]"' in out.out + out.err


def test_spec_cases_stay_out_of_the_default_run():
    assert not any(c.name.startswith("SpecStateRoot") for c in cases.select())

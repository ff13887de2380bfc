"""``python -m mpt.compat.execution_specs <tool> <arguments>``: execution-specs' evm tools (``t8n``, ``b11r``,
``statetest``, ``daemon``), exactly as ``ethereum-spec-evm <tool> <arguments>`` runs them, with mpt computing the
roots (install() first). ``--mpt-stats`` before the tool prints the patch's counters to stderr at the end."""

import json
import sys

from mpt.compat import execution_specs
from mpt.errors import MptError


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    show_stats = "--mpt-stats" in argv
    argv = [a for a in argv if a != "--mpt-stats"]

    try:
        execution_specs.install()
    except MptError as e:
        print(str(e), file=sys.stderr)
        return 2
    from ethereum_spec_tools.evm_tools import main as evm_main

    code = evm_main(argv)
    if show_stats:
        print(json.dumps(execution_specs.stats()), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""CometBFT's ``/tx?prove=true`` proofs in RPC JSON."""
from typing import Any, Iterable, Optional, Union

from _typeshed import ReadableBuffer

from mpt.merkle.proof import _Json

__all__ = ["tx_proof", "verify_tx_proof"]

def verify_tx_proof(obj: _Json, data_hash: Optional[Union[ReadableBuffer, str]] = None) -> bool: ...
def tx_proof(txs: Iterable[ReadableBuffer], index: int) -> dict[str, Any]: ...

"""StoreState: whether a persistent store is still open, as one C field (mpt/db/state.pxd)."""
from typing import final

@final
class StoreState:
    def __init__(self, description: str) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def description(self) -> str: ...
    def close(self) -> None:
        """Mark the store closed (for good)."""
    def check(self) -> None:
        """Raise StoreClosedError if the store is closed."""

"""Drop-in layers for the Python programs that compute Ethereum roots today: execution-specs (mpt.compat.execution_specs) and py-trie's HexaryTrie (mpt.compat.pytrie)."""

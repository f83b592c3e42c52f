"""CRC-32C (Castagnoli) and the masked form that frames each record of a MindSpore summary file.

The google-crc32c package computes it in C when installed; otherwise a table-driven pure-Python
version gives the same values (slow, about a megabyte a second, but summary records are small).
"""
__all__ = ["crc32c", "masked_crc32c", "implementation"]

# The mask of MindSpore's event writer (and TensorFlow's record format): a CRC stored next to
# the data it covers is rotated and offset, so that CRCs of data holding CRCs stay well mixed.
_MASK_DELTA = 0xA282EAD8
_POLYNOMIAL_REFLECTED = 0x82F63B78


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLYNOMIAL_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _make_table()


def _python_crc32c(data):
    """The pure-Python CRC-32C, kept callable so that tests compare it with the package's."""
    table, crc = _TABLE, 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    import google_crc32c as _google_crc32c

    def crc32c(data):
        """The CRC-32C of `data` (bytes-like), an int in [0, 2**32)."""
        return _google_crc32c.value(bytes(data))

    implementation = "google-crc32c"
except ImportError:
    def crc32c(data):
        """The CRC-32C of `data` (bytes-like), an int in [0, 2**32)."""
        return _python_crc32c(bytes(data))

    implementation = "python"


def masked_crc32c(data):
    """crc32c(data) rotated right by 15 bits plus 0xA282EAD8, modulo 2**32."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF

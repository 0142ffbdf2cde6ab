"""Flips the lowest bit of one byte of a file, in place.

usage: flip_byte.py FILE FRACTION    (the byte at int(FRACTION * size), FRACTION in [0, 1))
"""
import sys

path, fraction = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    data = bytearray(f.read())
at = min(len(data) - 1, int(fraction * len(data)))
data[at] ^= 0x01
with open(path, "wb") as f:
    f.write(data)

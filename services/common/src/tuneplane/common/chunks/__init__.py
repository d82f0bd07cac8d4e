"""Curve chunks' points as stored: steps, wall times and values in one compact, bit-exact
``bytea`` per chunk (``blob``), made of byte planes (``planes``)."""

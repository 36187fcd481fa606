"""The store layer: the data store (the system of record, every path), Redis keys, and records.

``DataStore`` owns every file path and ``RedisKeys`` every Redis key; ``records`` says what a
collation record holds (status, options) as plain data and pure functions, ``steps`` names the steps
of a collation, and ``transitions`` moves a record from one status to the next.
"""

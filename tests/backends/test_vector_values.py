"""What a database returns for the vectors it stores, computed without reading them back
(backends/vector_values.py), against the real servers: OceanBase's six-digit text and
sqlite-vec's float32 bytes."""

from __future__ import annotations

import random
import struct
import uuid
from urllib.parse import unquote, urlparse

import apsw
import numpy as np
import sqlite_vec

from powercontext.backends import centroid, vector_values
from powercontext.backends.driver import connect
from powercontext.backends.oceanbase.search import stored_vector_values
from powercontext.backends.seekdb.urls import drop_database

DIMENSION = 64


def edge_vectors() -> list[list[float]]:
    """Components a rounding rule can get wrong: zeros, tiny and huge exponents, powers
    of ten and their neighbours, values whose sixth digit sits on a half, plus seeded
    normal ones like a model's."""
    rng = random.Random(37)
    edges = [0.0, -0.0, 1e-20, -3e-16, 1e-15, 0.1, -0.01, 0.001, 1e-5, 0.999999, 0.9999995, 0.99999997,
             0.1234565, -0.12345650, 1.0, -1.0, 0.0999999, 0.1000001, 2.5e-6, 7.0e-7, 0.5, 0.25]
    vectors = [edges + [0.0] * (DIMENSION - len(edges))]
    for _ in range(300):
        vectors.append([rng.gauss(0.0, 0.06) * 10 ** rng.choice((0, 0, 0, -2, -4)) for _ in range(DIMENSION)])
    return vectors


def test_oceanbase_returns_each_component_rounded_to_six_significant_digits(oceanbase_url):
    database = f"pc_values_{uuid.uuid4().hex[:10]}"
    vectors = edge_vectors()
    p = urlparse(oceanbase_url)
    con = connect(host=p.hostname, port=p.port, user=unquote(p.username), password=unquote(p.password or ""),
                  autocommit=True, connect_timeout=10)
    try:
        with con.cursor() as cur:
            cur.execute(f"CREATE DATABASE {database}")
            cur.execute(f"CREATE TABLE {database}.v (id INT PRIMARY KEY, embedding VECTOR({DIMENSION}))")
            cur.executemany(f"INSERT INTO {database}.v VALUES (%s, %s)",
                            [(i, struct.pack(f"<{DIMENSION}f", *v)) for i, v in enumerate(vectors)])
            cur.execute(f"SELECT embedding FROM {database}.v ORDER BY id")
            returned = np.array([stored_vector_values(row[0]) for row in cur.fetchall()])
    finally:
        con.close()
        drop_database(oceanbase_url, database)
    assert np.array_equal(vector_values.six_digits(vectors), returned)
    # and so c̄ adds, without the read-back, exactly what a later removal subtracts
    by_rows, at_once = centroid.VectorSumDelta(DIMENSION), centroid.VectorSumDelta(DIMENSION)
    for values in returned.tolist():
        by_rows.add(values)
    at_once.add_many(vector_values.six_digits(vectors))
    assert (at_once.count, at_once.sums) == (by_rows.count, by_rows.sums)


def test_sqlite_vec_returns_each_component_as_float32():
    vectors = edge_vectors()
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIMENSION}])")
    for i, v in enumerate(vectors):
        con.execute("INSERT INTO v (rowid, embedding) VALUES (?, ?)", (i + 1, struct.pack(f"<{DIMENSION}f", *v)))
    returned = np.array([struct.unpack(f"<{DIMENSION}f", blob) for (blob,) in
                         con.execute("SELECT embedding FROM v ORDER BY rowid")])
    assert np.array_equal(vector_values.as_float32(vectors), returned)
    assert not np.array_equal(returned, np.array(vectors))  # float32 is not the doubles given

"""The OceanBase adapter (pymysql, FULLTEXT and HNSW) and every module only it uses.

Accounts, first loads, head rows, packet limits, server upkeep and search; its measured facts are in OCEANBASE_NOTES.md.
"""

"""The small core every layer stands on: settings, SQLite stores, ids, schemas, text checks and helpers."""

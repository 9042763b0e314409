"""Vector search over the active model's embeddings, derived from the canonical `embeddings` table.

- `vec0.py`: which model the index serves, the sqlite-vec `vec_embeddings` table (exact KNN, filters
  inside the scan; small stores and the fallback) and the rows every index is built from;
- `held.py`: a small type's vectors held in memory per connection, searched in numpy with vec0's exact answer;
- `ivf.py`: the IVF index in numpy files (large stores), with its in-memory delta of new rows;
- `index.py`: `VectorIndex`, one model's vectors: writes, searches and upkeep over both.

Both indexes can be rebuilt from the canonical table at any time (`nexus-memory rebuild-index`).
"""

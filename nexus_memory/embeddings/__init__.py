"""Layer 4, embeddings: the sentence model, the embedding step, the query encoder and vector search."""

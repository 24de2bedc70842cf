from sentence_transformers import SentenceTransformer

# Loading embedding model (SentenceBERT)
print("Loading the model…")
model = SentenceTransformer('bert-base-nli-mean-tokens')
print("Model loaded.")

def logic(sentences):
    print("SENTENCES:", sentences)
    # Embedding the sentences with model
    result_array = model.encode(sentences)
    print("ENCODDED")
    return result_array.tolist()

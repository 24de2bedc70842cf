import transformers
import tensorflow as tf
from transformers import BertTokenizer, TFBertModel

MODEL_NAME = "bert-base-uncased"

tokenizer = BertTokenizer.from_pretrained(MODEL_NAME)
model = TFBertModel.from_pretrained(MODEL_NAME)

if __name__ == "__main__":
    input_ids = tf.constant(tokenizer.encode_plus("Hello, my dog is cute", add_special_tokens=True))[None, :]
    outputs = model(input_ids)
    last_hidden_state = outputs[0]

    print(input_ids)
    print(outputs[0])

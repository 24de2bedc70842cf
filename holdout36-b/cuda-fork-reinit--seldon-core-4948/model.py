class ChatGLM:

    def __init__(self):
        model_path = '/root/Models/chatglm_6b_int4'
        self.tokenizer = aT.from_pretrained(model_path, trust_remote_code=True, revision="001")
        self.model = aM.from_pretrained(model_path, trust_remote_code=True, revision='001').half().cuda()

    def predict(self, x, features_names=None):
        ipt_ids = self.tokenizer(x[0], return_tensors='pt')
        for k, v in ipt_ids.items():
            print(v)
            ipt_ids[k] = v.cuda()   # **ERROR**
        print(ipt_ids)
        out = self.model(**ipt_ids)
        print(out)
        return x

import traceback
from faster_whisper import WhisperModel
import multiprocessing as mp
import torch

if __name__ == "__main__":
    torch.cuda.is_available()
    def sub():
        try:
            w = WhisperModel(
                model_size_or_path="tiny", 
                device="cuda", 
                compute_type="float32"
            )
        except:
            traceback.print_exc()
        finally:
            exit(0)
    try:
        p = mp.Process(
            target=sub,
        )
        p.start()
        p.join()
    finally:
        p.terminate()

# Loading a state_dict saved from a wrapper: every key has a "module." prefix
import torch
import torch.nn as nn

torch.manual_seed(0)
src = nn.Linear(2, 1)
saved = {"module." + k: v.clone() for k, v in src.state_dict().items()}
dst = nn.Linear(2, 1)
try:
    dst.load_state_dict(saved)
except RuntimeError as e:
    print("strict load failed:", "Missing key(s)" in str(e))
fixed = {k[len("module."):]: v for k, v in saved.items()}
dst.load_state_dict(fixed)
print(torch.equal(dst.weight, src.weight))
try:
    w = saved["weight"]
except KeyError as e:
    print("no key", str(e))

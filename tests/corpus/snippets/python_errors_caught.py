# Python errors around tensors: ZeroDivisionError, IndexError, AttributeError; then an assert
# expect-error: AssertionError
import torch

t = torch.arange(3.0, requires_grad=True)
counts = [0, 2]
try:
    avg = t.sum().item() / counts[0]
except ZeroDivisionError as e:
    print("zero:", str(e))
try:
    v = t[5]
except IndexError as e:
    print("index:", str(e))
try:
    t.grad.zero_()
except AttributeError as e:
    print("attr:", str(e))
try:
    bad = t + "a"
except Exception as e:
    print("other:", "unsupported" in str(e) or "add" in str(e))
assert t.grad is not None, "call backward() first"

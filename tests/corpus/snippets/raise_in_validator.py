# Validating inputs in a function: one ValueError is caught, the next one escapes
# expect-error: ValueError
import torch


def check_finite(name, t):
    if not torch.isfinite(t).all():
        raise ValueError(name + " has non-finite values")
    return t


good = check_finite("good", torch.tensor([1.0, 2.0]))
try:
    check_finite("bad", torch.tensor([1.0, float("inf")]))
except ValueError as e:
    print("caught:", str(e))
loss = torch.log(torch.tensor([0.0, 1.0]))
checked = check_finite("loss", loss)
print("unreachable")

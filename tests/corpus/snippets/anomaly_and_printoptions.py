# Debugging settings: torch.set_printoptions and autograd anomaly detection
import torch

torch.set_printoptions(precision=2, sci_mode=False)
x = torch.tensor([1.23456, 2.0, 1e-5], requires_grad=True)
print(x * 3)
torch.autograd.set_detect_anomaly(True)
y = (x ** 2).sum()
y.backward()
torch.autograd.set_detect_anomaly(False)
with torch.autograd.detect_anomaly():
    z = (x * x.detach()).sum()
    z.backward()
print(x.grad, torch.is_anomaly_enabled())
torch.set_printoptions(profile="default")
print(x.grad)

# F.relu_ on a clone is fine, on a leaf that requires grad it is an error
# expect-error: RuntimeError
import torch
import torch.nn.functional as F

torch.manual_seed(0)
conv = torch.nn.Conv1d(1, 1, 3)
x = torch.randn(1, 1, 5)
h = conv(x)
h2 = F.relu_(h.clone())
y = torch.tanh(h2)
loss = F.mse_loss(y, torch.zeros_like(y))
loss.backward()
print(conv.weight.grad, h2.grad_fn)
w = torch.ones(3, requires_grad=True)
F.relu_(w)

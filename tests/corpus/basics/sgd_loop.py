# a tutorial training loop: forward, backward, update under no_grad, zero the grad
import torch

torch.manual_seed(0)
X = torch.randn(8, 2)
true_w = torch.tensor([2.0, -3.0])
Y = X @ true_w + 1.0
w = torch.zeros(2, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.1
for epoch in range(4):
    pred = X @ w + b
    loss = ((pred - Y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad.zero_()
    b.grad.zero_()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

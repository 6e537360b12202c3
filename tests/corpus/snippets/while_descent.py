# Gradient descent in a while loop until the loss is small enough
import torch

x = torch.tensor(5.0, requires_grad=True)
steps = 0
loss = (x - 2) ** 2
while loss.item() > 0.01 and steps < 50:
    loss.backward()
    with torch.no_grad():
        x -= 0.2 * x.grad
    x.grad.zero_()
    loss = (x - 2) ** 2
    steps += 1
print(steps, x, loss)

# A global step counter updated inside a training function
import torch

step = 0
losses = []


def train_step(w, x):
    global step
    loss = (w * x).pow(2).sum()
    loss.backward()
    step += 1
    losses.append(loss.item())
    return loss


w = torch.tensor([0.5, -1.0], requires_grad=True)
x = torch.tensor([1.0, 2.0])
for _ in range(3):
    train_step(w, x)
print(step, losses, w.grad)

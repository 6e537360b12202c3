# optimizer.step(closure): the closure recomputes the loss and its gradients
import torch

torch.manual_seed(0)
w = torch.tensor([1.0, -2.0], requires_grad=True)
opt = torch.optim.SGD([w], lr=0.25)


def closure():
    opt.zero_grad()
    loss = (w**2).sum()
    loss.backward()
    return loss


for step in range(3):
    loss = opt.step(closure)
    print(step, loss.item(), w.grad)
print(w)

# the usual if __name__ == "__main__": guard
import torch

if __name__ == "__main__":
    x = torch.linspace(0, 1, 3, requires_grad=True)
    y = (x * x).mean()
    y.backward()
    print(__name__, x.grad)

# nn.Module with @property, @staticmethod and @classmethod, and @torch.no_grad() forward
import torch
import torch.nn as nn


class Scaler(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    @property
    def double_k(self):
        return self.k * 2

    @staticmethod
    def shift(x):
        return x + 1

    @classmethod
    def make(cls, k):
        return cls(k)

    @torch.no_grad()
    def forward(self, x):
        return self.shift(x) * self.double_k


s = Scaler.make(3)
y = s(torch.ones(2, requires_grad=True))
print(s.double_k, Scaler.shift(1), y, y.requires_grad)

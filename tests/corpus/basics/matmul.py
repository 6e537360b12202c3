# matrix products: @, mm, matmul batched, dot, outer, and their gradients
import torch

A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
B = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
C = A @ B
D = torch.mm(A, B)
v = torch.tensor([1.0, -1.0])
Av = A.matmul(v)
batch = torch.arange(8.0).reshape(2, 2, 2)
bm = torch.matmul(batch, B)
dt = torch.dot(v, v)
op = torch.outer(v, v)
es = torch.einsum("ij,jk->ik", A, B)
(C.sum() + Av.sum()).backward()
print(A.grad, C.grad_fn)

# modules own parameters; state_dict shares their memory; load_state_dict copies into them
lin = torch.nn.Linear(2, 1)
sd = lin.state_dict()
# plain: assert sd["weight"].untyped_storage().data_ptr() == lin.weight.untyped_storage().data_ptr()
# plain: assert not sd["weight"].requires_grad
lin.load_state_dict({"weight": torch.zeros(1, 2), "bias": torch.zeros(1)})
# plain: assert lin.weight._version == 2 and lin.weight.tolist() == [[0.0, 0.0]]
lin(torch.ones(1, 2)).sum().backward()
# plain: before = (lin.weight, lin.bias, lin.weight.grad, lin.weight._version)
lin.double()
# says: `lin.double()` swapped the memory under lin.weight and lin.bias: they are the same tensor objects
# says: on other memory now (S3, S4), float64 (was float32). Their version counters did not move (version 2).
# says: sd["weight"] and sd["bias"] still use the old memory and no longer share it with them
# says: lin.weight.grad is the same tensor object on other memory now (G3), float64 (was float32)
# never: lin.weight.grad is another tensor now
# plain: assert lin.weight.dtype == torch.float64 and lin.weight.grad.dtype == torch.float64
# plain: assert lin.weight is before[0] and lin.bias is before[1] and lin.weight.grad is before[2]
# plain: assert lin.weight._version == before[3] == 2
# plain: assert sd["weight"].untyped_storage().data_ptr() != lin.weight.untyped_storage().data_ptr()
# plain: assert sd["weight"].dtype == torch.float32
w = torch.ones(2, requires_grad=True)
(w * 2).sum().backward()
w.data = w.data.double()
# plain: assert w.dtype == torch.float64 and w.grad.dtype == torch.float32
lin.requires_grad_(False)
# plain: assert not lin.weight.requires_grad

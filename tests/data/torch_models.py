"""Small PyTorch models for tests/unit/test_from_torch.py (``clustersim scenario from-torch FILE.py:FACTORY``)."""

from torch import nn


def mlp() -> nn.Module:
    """784 -> 256 -> 10, ReLU: 203,530 parameters."""
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn() -> nn.Module:
    """A small CIFAR-style CNN: two 3x3 convolutions with batch norm and pooling, then a linear classifier."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 8 * 8, 10))

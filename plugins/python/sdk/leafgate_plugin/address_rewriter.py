"""The `address-rewriter` world: a virtual node's addresses.

    def rewrite(self, req: AddressRequest) -> List[NodeAddress]
"""

from wit_world.imports.types import AddressRequest, AddressType, NodeAddress

__all__ = ["AddressRequest", "AddressType", "NodeAddress", "address"]


def address(type: AddressType, value: str) -> NodeAddress:
    """One node address (`AddressType.INTERNAL_IP`, "10.0.0.1")."""
    return NodeAddress(type, value)

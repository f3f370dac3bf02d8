// A minimal Ice for C++ server, as an IceGrid node starts one: its configuration comes from
// --Ice.Config (written by the node); it serves one object, <Pinged.Identity>, on adapter
// Pinged, and runs until its communicator is shut down or it is killed. With `--ping PROXY…`
// it is a client instead: it pings each proxy and prints "pinged <proxy>".
#include <Ice/Ice.h>
#include <iostream>
#include <unistd.h>

int main(int argc, char* argv[])
{
    Ice::CommunicatorHolder holder(argc, argv);
    auto communicator = holder.communicator();
    if(argc > 1 && std::string(argv[1]) == "--ping")
    {
        for(int i = 2; i < argc; ++i)
        {
            communicator->stringToProxy(argv[i])->ice_ping();
            std::cout << "pinged " << argv[i] << std::endl;
        }
        return 0;
    }
    auto adapter = communicator->createObjectAdapter("Pinged");
    auto identity = Ice::stringToIdentity(communicator->getProperties()->getProperty("Pinged.Identity"));
    adapter->add(std::make_shared<Ice::Object>(), identity);
    adapter->activate();
    std::cout << "pinged server " << getpid() << " started" << std::endl;
    communicator->waitForShutdown();
    std::cout << "pinged server " << getpid() << " shutting down" << std::endl;
    return 0;
}

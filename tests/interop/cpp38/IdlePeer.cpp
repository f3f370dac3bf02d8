// An Ice 3.8 peer that keeps a connection idle, for floe's Ice 3.8 connection tests.
//
//   idle-peer server ENDPOINTS
//       Serves the object `idle` (any operation succeeds with no result) on ENDPOINTS, prints
//       "ready", and prints "closed: REASON" whenever a connection it dispatched on closes.
//   idle-peer client PROXY SECONDS
//       Pings PROXY, keeps its connection idle for SECONDS, then prints "RESULT same-connection"
//       when the connection is still the one it pinged over and pings again over it;
//       "RESULT closed: REASON" when the connection closed while idle.
//
// Ice properties come from the command line (--Ice.Connection.Client.IdleTimeout=2, ...).

#include <Ice/Ice.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

namespace
{
    std::mutex outputMutex;

    void say(const std::string& line)
    {
        std::lock_guard<std::mutex> lock(outputMutex);
        std::cout << line << std::endl;
    }

    std::string closeReason(const Ice::ConnectionPtr& connection)
    {
        try
        {
            connection->throwException();
        }
        catch (const std::exception& ex)
        {
            return ex.what();
        }
        return "closed without an exception";
    }

    // Answers every request with an empty result, and watches the connections it was called on.
    class IdleServant final : public Ice::Blobject
    {
    public:
        bool ice_invoke(std::vector<std::byte>, std::vector<std::byte>& out, const Ice::Current& current) final
        {
            if (current.con)
            {
                current.con->setCloseCallback(
                    [](const Ice::ConnectionPtr& connection) { say("closed: " + closeReason(connection)); });
            }
            // An empty encapsulation of encoding 1.1.
            out = {std::byte{6}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}, std::byte{1}};
            return true;
        }
    };

    int runServer(const Ice::CommunicatorPtr& communicator, const std::string& endpoints)
    {
        auto adapter = communicator->createObjectAdapterWithEndpoints("Idle", endpoints);
        adapter->add(std::make_shared<IdleServant>(), Ice::stringToIdentity("idle"));
        adapter->activate();
        say("ready");
        communicator->waitForShutdown();
        return 0;
    }

    int runClient(const Ice::CommunicatorPtr& communicator, const std::string& proxy, int seconds)
    {
        Ice::ObjectPrx target(communicator, proxy);
        target->ice_ping();
        auto connection = target->ice_getConnection();
        std::atomic<bool> closed{false};
        std::string reason;
        std::mutex reasonMutex;
        connection->setCloseCallback(
            [&](const Ice::ConnectionPtr& c)
            {
                std::lock_guard<std::mutex> lock(reasonMutex);
                reason = closeReason(c);
                closed = true;
            });
        say("idle for " + std::to_string(seconds) + " s");
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        while (!closed && std::chrono::steady_clock::now() < until)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (closed)
        {
            std::lock_guard<std::mutex> lock(reasonMutex);
            say("RESULT closed: " + reason);
            return 0;
        }
        target->ice_ping();
        if (target->ice_getConnection() != connection)
        {
            say("RESULT new-connection");
            return 0;
        }
        say("RESULT same-connection");
        return 0;
    }
}

int main(int argc, char* argv[])
{
    try
    {
        Ice::CommunicatorHolder holder(argc, argv);
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "server" && argc == 3)
        {
            return runServer(holder.communicator(), argv[2]);
        }
        if (mode == "client" && argc == 4)
        {
            return runClient(holder.communicator(), argv[2], std::stoi(argv[3]));
        }
        std::cerr << "usage: idle-peer server ENDPOINTS | idle-peer client PROXY SECONDS" << std::endl;
        return 2;
    }
    catch (const std::exception& ex)
    {
        std::cerr << "idle-peer: " << ex.what() << std::endl;
        return 1;
    }
}
